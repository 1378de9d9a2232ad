"""Model clients behind the one interface of `harness.models.interface`: Anthropic and OpenAI (and
any OpenAI-compatible server) through their official SDKs over httpx2, the offline
`local:smollm2`, and record/replay. `harness.run.setup.client_for` is the one factory."""
