"""Requests to served models, whatever their kind (chat, embeddings, rerank): the request and reply
types, the typed errors, deadlines on whole replies (:mod:`.transport`), retries, endpoints (bound,
first-call gate, breaker), the worker pool, the reply cache, batch APIs (:mod:`.batch`), prices,
usage, dry runs, the failure policy and the session's settings with their precedence. The chat
layer, the providers and the session that builds clients are in :mod:`harness.llm`, above this."""
