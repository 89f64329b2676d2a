"""Tests of the sandboxed code judge (real processes under bubblewrap)."""
