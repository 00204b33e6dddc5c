"""Trajectory collection: explorer policies in real environments, recorded step by step."""

from lwm.collect.runner import EpisodeResult, EpisodeSpec, plan, run, run_episode

__all__ = ["EpisodeResult", "EpisodeSpec", "plan", "run", "run_episode"]
