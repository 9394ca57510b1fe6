"""Issue 41, item 5: a run whose recipe has a [policy] opens with the plan's verdict, after a
failed run, a missed expectation and a disturbed one, before everything else the run shows."""

from __future__ import annotations

from html import escape

import pytest

pytest.importorskip("matplotlib", reason="the HTML report's charts need matplotlib (make test installs it)")

from backupbench.analysis.headline import run_headline  # noqa: E402
from backupbench.report import html  # noqa: E402
from backupbench.report.repository import ranked_candidates, verdict_headline  # noqa: E402
from backupbench.results.model import FAILED  # noqa: E402
from backupbench.sizing.recipe_plan import plan_of_run  # noqa: E402
from backupbench.sizing.verdict import amount_text  # noqa: E402

from report_support import kb_run, policy_run, recipe_run  # noqa: E402

PLAN = "Plan at this run's speeds: raidz2 of 24 x 16 TB meets the policy; binding: restore, 1.3 h (11%) to spare"


def test_the_plan_headline_names_the_recommended_layout_and_its_binding_margin():
    plan = plan_of_run(policy_run())
    assert plan is not None and plan.verdict.recommended is not None
    best = ranked_candidates(plan)[0]
    binding = best.requirement(best.binding)
    assert binding is not None and binding.met
    text = verdict_headline(plan)
    assert text.startswith(f"Plan at this run's speeds: {best.built} of 24 x 16 TB meets the policy; ")
    assert text.endswith(f"binding: {binding.name}, {amount_text(binding, binding.margin)} "
                         f"({binding.relative_margin:.0%}) to spare")


def test_without_a_passing_candidate_the_headline_says_the_nearest_miss_and_what_would_change_it():
    plan = plan_of_run(policy_run(passing=False))
    assert plan is not None and plan.verdict.recommended is None
    nearest = plan.verdict.ranking[0]
    change = next(c for c in plan.verdict.changes if c.layout == nearest)
    text = verdict_headline(plan)
    assert text.startswith("No candidate meets the policy: the nearest, ")
    assert text.endswith(f"; what would change it: {change.text}") and ".;" not in text


def test_the_plan_comes_after_a_failed_missed_or_disturbed_run_and_before_the_rest(tmp_path):
    run = kb_run(tmp_path)
    assert run_headline(run, plan=PLAN).text == PLAN
    assert not run_headline(run, plan=PLAN).bad
    missed = run_headline(run, ["restore-random>=3000MiB/s (measured 2,603.7 MiB/s)"], plan=PLAN)
    assert missed.bad and missed.text.startswith("Expectation missed: ")
    run.operations[0].others.add("other processes took 0.80 cores: stress (0.80 cores, 0.0 MiB/s)")
    disturbed = run_headline(run, plan=PLAN)
    assert disturbed.bad and "not fit for decisions" in disturbed.text
    run.status, run.error = FAILED, "fio exited 1"
    assert run_headline(run, plan=PLAN).text.startswith("The run is failed: fio exited 1")
    # Ahead of the layouts' comparison (and so of the slowest phase) when both could be said.
    layouts = recipe_run(tmp_path / "layouts")
    assert run_headline(layouts).text.startswith("No layout can be named the fastest")
    assert run_headline(layouts, plan=PLAN).text == PLAN


def test_the_page_opens_with_the_verdict_and_the_plan_before_the_other_tables(tmp_path):
    run = policy_run()
    page = html.render(run, results_dir=tmp_path)
    plan = plan_of_run(run)
    assert plan is not None
    headline = f'<p class="run-headline"><strong>{escape(verdict_headline(plan))}.</strong></p>'
    assert headline in page
    assert page.index(headline) < page.index("<table") < page.index('<section id="results">')
    assert page.index('<section id="repository-plan">') < page.index('<section id="results">')
    section = page[page.index('<section id="repository-plan">'):page.index('<section id="results">')]
    # The decision first within the plan too: the candidates, then what the restore points are.
    assert section.index("Candidates against the policy") < section.index("Restore points at their peak")


def test_a_disturbed_run_with_a_policy_still_opens_with_the_disturbance(tmp_path):
    run = policy_run()
    run.operations[0].others.add("other processes took 0.80 cores: stress (0.80 cores, 0.0 MiB/s)")
    page = html.render(run, results_dir=tmp_path)
    assert '<p class="run-headline bad"><strong>1 of 5 phases ran beside other processes' in page
    assert '<section id="repository-plan">' in page   # the plan is still shown, first
