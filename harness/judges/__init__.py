"""Judges (kind ``judge``): components that grade (query, document) pairs of a run. ``umbrela.py``
(UMBRELA's 0-3 relevance assessor) with its prompts and reply parsing in ``umbrela_prompts.py`` and the
templates in ``prompts/``. Plugins' judges (IFIR's ``instfol``) live in their plugins."""
