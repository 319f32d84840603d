"""`mycelium exec`, `describe` and `search`: the local verbs, run against the notes app as its owner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from mycelium.cli import cli
from tests.support.paths import APPS, EXAMPLES

NOTES_APP = str(EXAMPLES / "notes_app.py")


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MYCELIUM_DATA_DIR", str(tmp_path / "data"))
    return CliRunner()


def invoke(runner: CliRunner, *args: str, stdin: str | None = None) -> Result:
    return runner.invoke(cli, list(args), input=stdin)


def test_exec_prints_the_programs_value_as_compact_json_when_piped(run: CliRunner) -> None:
    result = invoke(run, "exec", NOTES_APP, "--code", 'return (await notes.create(title="hello"))["title"]')
    assert result.exit_code == 0, result.stderr
    assert result.stdout == '"hello"\n'


def test_exec_reads_the_program_from_a_file_or_stdin_and_prints_its_output_on_stderr(
    run: CliRunner, tmp_path: Path
) -> None:
    program = tmp_path / "program.py"
    program.write_text('print("made one")\nreturn {"made": 1}\n')
    from_file = invoke(run, "exec", NOTES_APP, str(program))
    from_stdin = invoke(run, "exec", NOTES_APP, "-", stdin=program.read_text())
    for result in (from_file, from_stdin):
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout) == {"made": 1}
        assert "made one" in result.stderr


def test_exec_of_a_failing_program_exits_1_and_names_the_failure_code(run: CliRunner) -> None:
    result = invoke(run, "exec", NOTES_APP, "-c", "return (")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("syntax: The program has a syntax error")


def test_exec_refuses_a_confirm_operation_when_nobody_can_be_asked_and_approve_approves_it(run: CliRunner) -> None:
    program = 'made = await notes.create(title="doomed")\nreturn await notes.delete(id=made["id"])'
    refused = invoke(run, "exec", NOTES_APP, "-c", program)
    approved = invoke(run, "exec", NOTES_APP, "-c", program, "--approve")
    assert json.loads(refused.stdout)["reason"] == "confirmation-unavailable"
    assert json.loads(approved.stdout)["deleted"] is True


@pytest.mark.parametrize("args", [[], ["-c", "return 1", "program.py"]], ids=["no program", "two programs"])
def test_exec_wants_the_program_exactly_once(run: CliRunner, args: list[str]) -> None:
    result = invoke(run, "exec", NOTES_APP, *args)
    assert result.exit_code == 2
    assert "give the program once" in result.stderr


def test_a_local_verb_with_a_bad_app_says_what_was_wrong_and_exits_2(run: CliRunner, tmp_path: Path) -> None:
    result = invoke(run, "exec", str(tmp_path / "missing.py"), "-c", "return 1")
    assert result.exit_code == 2
    assert "no such file" in result.stderr
    assert "Traceback" not in result.stderr


def test_describe_prints_the_execute_description_or_one_operations_stub(run: CliRunner) -> None:
    whole = invoke(run, "describe", NOTES_APP)
    one = invoke(run, "describe", NOTES_APP, "notes.delete")
    assert whole.exit_code == 0, whole.stderr
    assert whole.stdout.startswith("Run a short Python program in a fresh sandbox")
    assert one.exit_code == 0, one.stderr
    assert "async def delete(*, id: int)" in one.stdout


def test_search_prints_the_best_ranked_operations_first(run: CliRunner) -> None:
    result = invoke(run, "search", NOTES_APP, "delete a note", "--limit", "3")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("notes.delete  ")


FLAWED_APP = str(APPS / "flawed_app.py")


def test_check_reports_each_catalog_problem_and_exits_1_on_errors(run: CliRunner) -> None:
    result = invoke(run, "check", FLAWED_APP)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("error: clashing: module 'clashing': its top-level name 'json' is a module the sandbox")
    assert lines[1] == "error: directory: source 'directory' failed to acquire: it raised ConnectionError [source]"
    assert [line.rsplit("[", 1)[-1] for line in lines[2:5]] == [
        "no-description]",
        "untyped-output]",
        "long-first-line]",
    ]
    assert lines[-1] == "2 errors, 3 warnings"
    assert "10.0.0.9" not in result.output  # a source's own error text is the operator's log, not this report


def test_check_passes_warnings_unless_strict_and_a_clean_app_always(run: CliRunner) -> None:
    warned, strict = (
        invoke(run, "check", f"{FLAWED_APP}:only_warnings"),
        invoke(run, "check", f"{FLAWED_APP}:only_warnings", "--strict"),
    )
    clean = invoke(run, "check", NOTES_APP, "--strict")
    assert (warned.exit_code, strict.exit_code, clean.exit_code) == (0, 1, 0)
    assert warned.stdout.splitlines()[-1] == "0 errors, 3 warnings"
    assert clean.stdout == "0 errors, 0 warnings\n"


@pytest.mark.parametrize("verb", ["serve", "exec", "describe", "search", "check"])
def test_every_verb_explains_itself_and_its_app_argument_in_help(run: CliRunner, verb: str) -> None:
    result = invoke(run, verb, "--help")
    assert result.exit_code == 0
    assert "module:attribute or path/to/app.py[:attribute]" in result.stdout
    summary = result.stdout.split("\n\n")[1].strip()
    assert len(summary) > 30, summary  # a sentence saying what the verb does


def test_search_takes_several_phrasings_of_one_need(run: CliRunner) -> None:
    result = invoke(run, "search", NOTES_APP, "get rid of it", "notes.delete", "--limit", "1")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("notes.delete  ")
    five = invoke(run, "search", NOTES_APP, "a", "b", "c", "d", "e")
    assert five.exit_code != 0
    assert "1 to 4 phrasings" in five.output


def test_check_warns_of_an_operation_without_type_hints_on_both_sides_and_fails_it_only_when_strict(
    run: CliRunner, tmp_path: Path
) -> None:
    app = tmp_path / "untyped_lookup_app.py"
    app.write_text(
        'from mycelium import Module\n\nbooks = Module(id="books-v1", name="books")\n\n\n'
        '@books.operation(access="read")\ndef lookup(title, shelf=1):\n    """Find a book by title."""\n'
        "    return {'title': title}\n"
    )
    warned = invoke(run, "check", f"{app}:books")
    strict = invoke(run, "check", f"{app}:books", "--strict")
    assert (warned.exit_code, strict.exit_code) == (0, 1)
    assert warned.stdout.splitlines() == [
        "warning: books.lookup: parameters 'title', 'shelf' have no type: the model must guess what to pass, and any "
        'value gets through; annotate each one (e.g. `title: str`, `shelf: int = 1`), or give each a "type" in the '
        "input schema [untyped-input]",
        "warning: books.lookup: no output type: the model cannot know the shape of the result; give it one "
        "[untyped-output]",
        "0 errors, 2 warnings",
    ]
