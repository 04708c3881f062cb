"""Tests of the analyses app: mirror and history models, the mirror adapter."""
