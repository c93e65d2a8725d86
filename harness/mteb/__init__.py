"""The MTEB side of results: which MTEB task a stored run is (:mod:`.identity`: from the registered task and
the recorded dataset identity, never from the claimed block), the table of MTEB's tasks (:mod:`.known_tasks`,
``harness/data/mteb_tasks.json``), the decision for ``--dataset mteb:`` runs (:mod:`.dataset_runs`) and
MTEB result files written from results folders (:mod:`.result_files`, ``harness export mteb``). It reads
results folders (:mod:`harness.results`) and the registry; the MTEB-layout dataset loader is
:mod:`harness.datasets.mteb`."""
