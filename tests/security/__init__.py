"""Attacks tried as a student, an API client or an anonymous visitor would: each one held."""
