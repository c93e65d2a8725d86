from __future__ import annotations

import pytest

from harness.components.component_spec import parse_spec
from harness.concepts.errors import HarnessError


@pytest.mark.parametrize(
    "text,name,source,args",
    [
        ("bm25", "bm25", None, {}),
        ("dense:model=all-MiniLM-L6-v2,batch_size=64", "dense", None,
         {"model": "all-MiniLM-L6-v2", "batch_size": 64}),
        ("plugin:nv-embed", "nv-embed", "plugin", {}),
        ("plugin:nv-embed:model=/models/nv", "nv-embed", "plugin", {"model": "/models/nv"}),
        ("pap:base=dense", "pap", None, {"base": "dense"}),
        ("pir:perspectrum", "perspectrum", "pir", {}),
        ("x:url=http://127.0.0.1:8000/v1,flag=true,ratio=0.5", "x", None,
         {"url": "http://127.0.0.1:8000/v1", "flag": True, "ratio": 0.5}),
        ("x:ids=[1,2],name='a,b'", "x", None, {"ids": [1, 2], "name": "a,b"}),
    ],
)
def test_parse_spec(text, name, source, args):
    spec = parse_spec(text)
    assert (spec.name, spec.source, spec.args) == (name, source, args)


def test_bad_specs():
    with pytest.raises(HarnessError, match="empty"):
        parse_spec("  ")
    with pytest.raises(HarnessError, match="key=value"):
        parse_spec("dense:model=x,oops")
