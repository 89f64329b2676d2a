"""Pages students and teachers see inside the LMS."""
