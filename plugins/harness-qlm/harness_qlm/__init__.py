"""harness-qlm: registers the retriever `qlm` (query likelihood, Dirichlet smoothing). Imported by
every `harness` command: keep it light."""

from harness import hookimpl, lazy

__version__ = "0.1.0"


@hookimpl
def register_retrievers(register):
    register("qlm", lazy("harness_qlm.retriever:QueryLikelihood"),
             "Query likelihood with Dirichlet smoothing (mu=2000); numpy, no model")
