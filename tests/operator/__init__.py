"""Tests of the operator: its clients, decision core and reconcile loop."""
