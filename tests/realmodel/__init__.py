"""Grading against a real OpenAI-compatible model server (llama.cpp with a tiny model in CI,
any server named by EVALUAITOR_LLM_BASE_URL otherwise): what must hold whatever it answers."""
