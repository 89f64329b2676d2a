"""Sandboxed code judge: compile and run student programs against teacher test cases."""
