#!/usr/bin/env bash
# Update the message catalogues from the code and templates, then compile them.
#   bash scripts/translations.sh          extract + update + compile
#   bash scripts/translations.sh compile  compile only (setup runs this)
# The languages are app.i18n.LANGUAGES (English, the source language, needs no catalogue).
# The template (.pot) is a temporary file; the .po files are committed, the .mo files are built.
set -euo pipefail
cd "$(dirname "$0")/.."
PYBABEL=".venv/bin/pybabel"
if [[ "${1:-}" != "compile" ]]; then
    pot=$(mktemp --suffix=.pot)
    trap 'rm -f "$pot"' EXIT
    "$PYBABEL" -q extract -F babel.cfg -k _l -k lazy_gettext -k N_ --no-location --sort-output \
        -o "$pot" .
    for lang in $(.venv/bin/python -c 'from app.i18n import LANGUAGES; print(*LANGUAGES[1:])'); do
        if [[ -f "app/translations/$lang/LC_MESSAGES/messages.po" ]]; then
            "$PYBABEL" -q update -i "$pot" -d app/translations -l "$lang" --no-fuzzy-matching \
                --ignore-obsolete --width 100
        else
            "$PYBABEL" -q init -i "$pot" -d app/translations -l "$lang" --width 100
        fi
    done
fi
if compgen -G "app/translations/*/LC_MESSAGES/messages.po" >/dev/null; then
    "$PYBABEL" -q compile -d app/translations
fi
