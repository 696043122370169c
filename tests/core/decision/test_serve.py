"""``python -m core.decision.serve`` (transformers' serving machinery) answers as our local Decider."""

import pytest
import torch

from core.decision import system_one
from core.decision.endpoint import EndpointError, SystemOneEndpoint
from core.decision.export import load_decider
from tests.fixtures.served_export import served
from tests.fixtures.tiny_decision import export_tiny

REQUEST = {"state": {"ticket": "Card charged twice, refund missing.", "customer": "Zoë"}, "questions": {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}},
    "prio": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
    "page": {"type": "noul", "instructions": "Page someone now?"}}}

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")


@pytest.mark.slow
def test_served_export_answers_with_the_local_deciders_probabilities(tmp_path):
    torch.set_num_threads(1)
    export = export_tiny(tmp_path / "tiny-a")
    local = load_decider(export).score(REQUEST)
    with served(export) as url:
        remote = SystemOneEndpoint(url, timeout=60).score(REQUEST)
        with pytest.raises(EndpointError, match="HTTP 422.*Question 'bad'"):  # the server's own validation
            SystemOneEndpoint(url, timeout=60).post({"state": "s", "questions": {"bad": {"type": "rank"}}})
    assert list(remote["answers"]) == list(REQUEST["questions"])
    for name, ans in remote["answers"].items():
        assert system_one.probabilities_of(ans) == pytest.approx(system_one.probabilities_of(local["answers"][name]),
                                                                 abs=1e-5)
        if "confidence" in ans:
            assert ans["confidence"] == pytest.approx(local["answers"][name]["confidence"], abs=1e-5)
    # the server tokenizes one prompt per question, so the prefix counts once per question there
    n = len(REQUEST["questions"])
    assert remote["usage"]["input_tokens"] == local["usage"]["input_tokens"] + (n - 1) * local["usage"]["prefix_tokens"]
