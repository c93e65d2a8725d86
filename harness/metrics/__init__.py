"""Metrics: standard IR measures (through ir-measures / pytrec_eval) and the resolution of
metric names given on the command line or by tasks."""
