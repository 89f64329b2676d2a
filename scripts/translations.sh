#!/usr/bin/env bash
# Update the message catalogues from the code and templates, then compile them.
#   bash scripts/translations.sh          extract + update + compile
#   bash scripts/translations.sh compile  compile only (setup runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
PYBABEL=".venv/bin/pybabel"
if [[ "${1:-}" != "compile" ]]; then
    "$PYBABEL" -q extract -F babel.cfg -k _l -k lazy_gettext -k N_ --no-location --sort-output \
        -o app/translations/messages.pot .
    if [[ -f app/translations/es/LC_MESSAGES/messages.po ]]; then
        "$PYBABEL" -q update -i app/translations/messages.pot -d app/translations --no-fuzzy-matching
    else
        "$PYBABEL" -q init -i app/translations/messages.pot -d app/translations -l es
    fi
fi
if compgen -G "app/translations/*/LC_MESSAGES/messages.po" >/dev/null; then
    "$PYBABEL" -q compile -d app/translations
fi
