"""Proves: the optional LLM judge of supersession decides what is recorded, and its failure falls
back to the extractive decision, with each record saying which path decided it.

Against a real HTTP server on 127.0.0.1 answering the judge prompt (``supersede.JUDGE_PROMPT``),
with the real spaCy model and all-MiniLM-L6-v2 over two changed plans stored as typed memories:
- extractively, both changes are recorded (the baseline the judge works from);
- the judge confirming a pair records it as decided by ``llm``; rejecting one removes it, in the
  same answer, so each true/false is matched to its own pair;
- an endpoint answering 500, one refusing connections and one answering something other than one
  true/false per pair leave the extractive records, marked ``extractive``.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory_pipeline.consolidation.supersession import supersede_tenant
from memory_pipeline.llm.client import LLMClient
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.tenancy import Tenant
from memory_pipeline.timeline.records import SupersessionStore
from memory_pipeline.timeline.supersede import JUDGE_PROMPT

pytestmark = pytest.mark.slow
KIM = Tenant("bot", "kim")
PLANS = [
    ("The offsite is on 14 May.", datetime(2026, 3, 3, 9, tzinfo=UTC)),
    ("Our standup is at 9:30 every morning.", datetime(2026, 3, 4, 9, tzinfo=UTC)),
    ("The offsite was rescheduled to 4 June.", datetime(2026, 4, 7, 9, tzinfo=UTC)),
    ("Since half the team moved to Singapore hours, the standup is at 8:00 now.", datetime(2026, 4, 8, 9, tzinfo=UTC)),
]
_PAIR_RE = re.compile(r"^\d+\. EARLIER \(\d{4}-\d{2}-\d{2}\): (.*)\n\s+LATER \(\d{4}-\d{2}-\d{2}\): (.*)$", re.M)


class Judge:
    """A /chat/completions endpoint that judges each numbered pair with ``verdict(earlier, later)``,
    or answers 500 (``mode = "error"``) or a malformed list (``mode = "short"``)."""

    def __init__(self):
        self.mode = "ok"
        self.verdict = lambda earlier, later: True
        self.asked: list[list[tuple[str, str]]] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                system, user = (m["content"] for m in body["messages"])
                assert system == JUDGE_PROMPT
                pairs = _PAIR_RE.findall(user)
                judge.asked.append(pairs)
                if judge.mode == "error":
                    self.send_response(500)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                answer = [judge.verdict(a, b) for a, b in pairs]
                if judge.mode == "short":
                    answer = answer[:-1]
                payload = json.dumps({"choices": [{"message": {"content": json.dumps(answer)}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def judge():
    endpoint = Judge()
    yield endpoint
    endpoint.server.shutdown()


@pytest.fixture
def plans(tmp_path, minilm):
    """The lance folder holding the four plans, and {text: ref}."""
    lance_uri = str(tmp_path / "lancedb")
    typed = TypedMemories.open(lance_uri, minilm)
    refs = {text: f"facts/{typed.store_memory(KIM, 'event', text, occurred_at=when, actor='test')['id']}"
            for text, when in PLANS}
    return lance_uri, refs


def decided(tmp_path, lance_uri, minilm, nlp, llm) -> dict[tuple[str, str], str]:
    """{(old ref, new ref): decided_by} of the records one consolidation stores."""
    supersede_tenant(tmp_path, lance_uri, KIM, minilm, datetime(2026, 5, 1, tzinfo=UTC), nlp=nlp, llm=llm)
    return {(r["old_ref"], r["new_ref"]): r["decided_by"] for r in SupersessionStore(lance_uri).rows(KIM.key).iter_rows(named=True)}


def client(url: str, model: str = "judge") -> LLMClient:
    return LLMClient(url, model, attempts=2, backoff=0.01, timeout=10)


def test_the_judge_confirms_and_rejects_pairs(tmp_path, plans, judge, minilm, nlp):
    lance_uri, refs = plans
    offsite = (refs[PLANS[0][0]], refs[PLANS[2][0]])
    standup = (refs[PLANS[1][0]], refs[PLANS[3][0]])
    assert decided(tmp_path, lance_uri, minilm, nlp, None) == {offsite: "extractive", standup: "extractive"}

    assert decided(tmp_path, lance_uri, minilm, nlp, client(judge.url)) == {offsite: "llm", standup: "llm"}
    assert sorted(judge.asked[-1]) == sorted([(PLANS[0][0], PLANS[2][0]), (PLANS[1][0], PLANS[3][0])])

    # Records stand while the statements, relations and the deciding model are unchanged: the same
    # model is not asked again; another model decides afresh.
    judge.verdict = lambda earlier, later: "standup" not in later
    asked = len(judge.asked)
    assert decided(tmp_path, lance_uri, minilm, nlp, client(judge.url)) == {offsite: "llm", standup: "llm"}
    assert len(judge.asked) == asked
    assert decided(tmp_path, lance_uri, minilm, nlp, client(judge.url, "judge-2")) == {offsite: "llm"}
    judge.verdict = lambda earlier, later: "offsite" not in later
    assert decided(tmp_path, lance_uri, minilm, nlp, client(judge.url, "judge-3")) == {standup: "llm"}


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("failure", ["error", "refused", "short"])
def test_a_failing_judge_leaves_the_extractive_decision(failure, tmp_path, plans, judge, minilm, nlp):
    lance_uri, refs = plans
    offsite = (refs[PLANS[0][0]], refs[PLANS[2][0]])
    standup = (refs[PLANS[1][0]], refs[PLANS[3][0]])
    judge.verdict = lambda earlier, later: False  # were it heard, nothing would be recorded
    judge.mode = failure
    url = _closed_port() if failure == "refused" else judge.url
    assert decided(tmp_path, lance_uri, minilm, nlp, client(url)) == {offsite: "extractive", standup: "extractive"}
    assert len(judge.asked) == {"error": 2, "refused": 0, "short": 1}[failure]  # 500 is retried once
