#!/usr/bin/env bash
# Install bubblewrap, the code judge's sandbox (docs/sandbox.md), with apt when missing.
exec bash "$(dirname "$0")/apt-install.sh" bwrap bubblewrap "the code judge needs it"
