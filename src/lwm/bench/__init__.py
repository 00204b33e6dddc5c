"""AgentWorldBench-compatible benchmark: samples, inference, judging, scores (README.md here)."""
