"""The optional LLM endpoint: the client that calls it (``client``) and the checks its answers
pass before anything they say is stored (``output``). Summaries, dreaming and supersession use it."""
