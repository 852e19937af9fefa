"""JUnit XML: one ``<testsuite>`` per run, one ``<testcase name="scenario::check">`` per check result.

A failed check is a ``<failure>`` (message: the explanation; text: explanation and
evidence); a not-applicable check is ``<skipped>``; a scenario that could not be
run (cassette missing, target import error ...) is one ``<testcase
name="scenario::run">`` with an ``<error>``. Built with ``xml.etree`` so the
output is well-formed; characters XML 1.0 cannot hold (ANSI escapes in a
traceback, NUL ...) are replaced by ``\\xNN`` escapes first.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from ..checks.base import CheckResult, Status
from ..result import RunReport, ScenarioResult
from .summary import counts

SUITE_NAME = "rlm-conformance"
ERROR_CASE = "run"
"""The check-name part of the testcase that stands for a scenario that could not be run."""

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids written as a ``\\xNN`` escape."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _evidence_text(check: CheckResult) -> str:
    lines = [check.explanation, *(f"- {line}" for line in check.evidence)]
    return xml_safe("\n".join(lines))


_SLOT = "rlm-conformance-testcases-go-here"


def render_junit(report: RunReport) -> str:
    return "".join(iter_junit(report))


def iter_junit(report: RunReport) -> Iterator[str]:
    """The JUnit XML in pieces, one result's ``<testcase>``s at a time (``testcases_piece``, or the part the run
    rendered as the result arrived): the text ``ET.indent`` + ``ET.tostring`` of the whole tree gives, without
    holding the tree (about 60 KB of elements per scenario)."""
    c = counts(report)
    errors = sum((r.error is not None) + len(r.crashed_turns) for r in report.results)
    tests = sum(len(r.checks) for r in report.results) + errors
    root = ET.Element("testsuites", name=SUITE_NAME, tests=str(tests), failures=str(c.failed),
                      errors=str(errors), skipped=str(c.not_applicable),
                      time=f"{sum(r.duration_s for r in report.results):.3f}")
    suite = ET.SubElement(root, "testsuite", name=SUITE_NAME, tests=str(tests), failures=str(c.failed),
                          errors=str(errors), skipped=str(c.not_applicable),
                          time=f"{sum(r.duration_s for r in report.results):.3f}",
                          timestamp=xml_safe(report.started_at), hostname=xml_safe(report.machine))
    properties = ET.SubElement(suite, "properties")
    for name, value in {"tool_version": report.tool_version, **report.extra}.items():
        ET.SubElement(properties, "property", name=xml_safe(name), value=xml_safe(value))
    ET.SubElement(suite, "testcase", name=_SLOT)  # where the test cases go, in the indented text
    ET.indent(root)
    head, tail = ET.tostring(root, encoding="unicode", xml_declaration=True).split(f'<testcase name="{_SLOT}" />')
    first = True
    for index, result in enumerate(report.results):
        piece = report.piece_at(index, "junit")
        piece = testcases_piece(result) if piece is None else piece
        if piece:
            yield (head if first else "\n    ") + piece
            first = False
    yield (head.removesuffix("\n    ") if first else "") + tail + "\n"


def testcases_piece(result: ScenarioResult) -> str:
    """``result``'s ``<testcase>`` elements as ``iter_junit`` writes them (indented, one per line; "" if none)."""
    cases = []
    for case in _testcases(result):
        ET.indent(case, level=2)  # as deep as under the whole tree
        cases.append(ET.tostring(case, encoding="unicode"))
    return "\n    ".join(cases)


def _testcases(result: ScenarioResult) -> Iterator[ET.Element]:
    for check in result.checks:
        case = ET.Element("testcase", classname=xml_safe(result.scenario),
                          name=xml_safe(f"{result.scenario}::{check.name}"), time="0.000")
        if check.status is Status.FAIL:
            failure = ET.SubElement(case, "failure", message=xml_safe(check.explanation), type="CheckFailed")
            failure.text = _evidence_text(check)
        elif check.status is Status.NOT_APPLICABLE:
            ET.SubElement(case, "skipped", message=xml_safe(check.explanation))
        else:
            ET.SubElement(case, "system-out").text = _evidence_text(check)
        yield case
    if result.declared is not None:  # a strict xfail, as pytest writes one: skipped, or a failure if it passed
        case = ET.Element("testcase", classname=xml_safe(result.scenario),
                          name=xml_safe(f"{result.scenario}::declared"), time="0.000")
        if result.status == "xfail":
            ET.SubElement(case, "skipped", type="pytest.xfail", message=xml_safe(result.declared))
        else:
            ET.SubElement(case, "failure", type="XPASS(strict)",
                          message=xml_safe(f"passed, but declared to fail: {result.declared}"))
        yield case
    if result.error is not None:
        case = ET.Element("testcase", classname=xml_safe(result.scenario),
                          name=xml_safe(f"{result.scenario}::{ERROR_CASE}"), time=f"{result.duration_s:.3f}")
        first_line = result.error.strip().splitlines()[0] if result.error.strip() else "the scenario could not run"
        error = ET.SubElement(case, "error", message=xml_safe(first_line), type="HarnessError")
        error.text = xml_safe(f"{result.error}\n(target {result.target}, LLM mode {result.llm_mode}, "
                              f"session service {result.session_service})")
        yield case
    for turn in result.crashed_turns:
        crash = turn.outcome.crash
        case = ET.Element("testcase", classname=xml_safe(result.scenario),
                          name=xml_safe(f"{result.scenario}::turn {turn.turn}"), time="0.000")
        error = ET.SubElement(case, "error", message=xml_safe(crash.describe().splitlines()[0]),
                              type=xml_safe(crash.type))
        error.text = xml_safe("\n".join([
            f"turn {turn.turn} (session {turn.session_id}) raised {crash.describe()}",
            *([f"caused by {crash.cause}"] if crash.cause else []),
            f"termination {turn.outcome.termination}; target {result.target}, LLM mode {result.llm_mode}",
            *crash.traceback]))
        yield case
