"""Model clients behind the one interface of `harness.model`: Anthropic and OpenAI (and
any OpenAI-compatible server) through their official SDKs over httpx2, the offline
`local:smollm2`, and record/replay. `harness.run_setup.client_for` is the one factory."""
