"""``harness view``: a local, read-only web app over results folders (and a static bundle of it).

:mod:`harness.view.catalog` finds the runs and builds every payload the page shows (runs, a run, a
query, a comparison) through the results contract's reader and the untrusted-folder rules of
:mod:`harness.formats.bounded`, every row of the optional files type-checked by :mod:`harness.view.rows`;
:mod:`harness.view.server` serves them on loopback;
:mod:`harness.view.bundle` writes them as a static folder that opens from ``file://``. The page
itself is ``static/`` (one hand-written HTML/JS/CSS app, no build step, no network)."""
