"""Analyses that need the whole pipeline (select -> synth -> render), e.g. dead recipe values."""
