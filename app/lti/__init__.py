"""LTI 1.3: tool configuration, launches, sessions, keys, and Assignment and Grade Services."""
