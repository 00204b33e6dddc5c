"""Trajectory collection: explorer policies in real environments, recorded step by step."""

from lwm.collect.runner import EpisodeResult, EpisodeSpec, collect_episode, plan, run

__all__ = ["EpisodeResult", "EpisodeSpec", "plan", "run", "collect_episode"]
