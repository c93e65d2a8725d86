"""The built-in dataset loaders, components of kind ``dataset`` (:mod:`.loaders`: BEIR, TREC,
rank_llm, NovelEval, SciFact, the demo; :mod:`.mteb`: any MTEB-layout Hub dataset). Where their files
live and how they are fetched is :mod:`harness.data`, below."""
