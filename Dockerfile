# Evaluaitor: web app (gunicorn) by default; run the worker from the same image with
#   docker run ... evaluaitor worker
# Production sets DATABASE_URL, REDIS_URL, SECRET_KEY and mounts /data for uploads and keys.
# It expects one reverse proxy in front that terminates TLS (EVALUAITOR_TRUSTED_PROXIES=1).
# Monitoring (README, "Operations"): /healthz and /readyz for probes; /metrics once
# EVALUAITOR_METRICS_TOKEN is set. Each container keeps its counters in its own
# PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py empties it at start); a worker container serves
# its own with EVALUAITOR_WORKER_METRICS_ADDRESS=0.0.0.0:9101 (and -p 9101).
# The worker runs students' programs under bubblewrap: its container needs the security options
# in docs/sandbox.md ("In a container"), e.g.
#   docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined ... evaluaitor worker
# Debian 12 (bookworm): its JDK 17 is the one whose /etc/java-17-openjdk the sandbox mounts.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    EVALUAITOR_INSTANCE_DIR=/data/instance \
    EVALUAITOR_DATA_DIR=/data/submissions \
    EVALUAITOR_KEY_DIR=/data/keys \
    EVALUAITOR_TRUSTED_PROXIES=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/evaluaitor-metrics

# The code judge (app/judge/languages.py): bubblewrap, its sandbox, and the toolchains it runs
# inside it (Python is the image's own). The man directory is missing in slim images and the
# JDK's post-install needs it.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends \
        bubblewrap \
        gcc \
        g++ \
        libc6-dev \
        openjdk-17-jdk-headless \
        nodejs \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /srv/evaluaitor
# Editable install: the Alembic migrations stay next to the package, where Flask-Migrate finds them.
COPY pyproject.toml README.md ./
COPY app ./app
COPY migrations ./migrations
COPY wsgi.py gunicorn.conf.py ./
RUN pip install --no-cache-dir -e . gunicorn \
    && pybabel compile -d app/translations \
    && useradd --system --home /data evaluaitor \
    && mkdir -p /data && chown evaluaitor /data

USER evaluaitor
VOLUME ["/data"]
EXPOSE 8000
CMD ["sh", "-c", "evaluaitor db upgrade && exec gunicorn --bind 0.0.0.0:8000 --workers 4 --threads 4 wsgi:app"]
