"""A change under test: the commit it is measured from, and the lines of code it touches.

The base is what was there before the change:
  - MUTANTS_BASE (the hosted workflow sets it: a pull request's base, a push's previous tip),
    taken as its merge base with HEAD, so that a branch is measured from where it left;
  - else, when HEAD is a merge, its first parent: a stop lands on main as a merge of its branch,
    and the first parent is the last landed commit;
  - else the newest merge on HEAD's first-parent line (the last landing, with the commits made
    on main since it), or, without one, the first commit.

The lines are those whose code differs from the base's: comments, doc comments, blank lines and
whitespace inside a line are not code, so a change of them alone touches none. cargo-mutants'
own `--in-diff` takes every changed line, and a changed comment inside a function would name
that function's replacement mutants. Both sides are read with comments blanked by pygments'
Rust lexer (which knows strings, raw strings, char literals and nested block comments) and
whitespace removed; `as_diff` writes the touched lines as a diff of the real lines, which
cargo-mutants checks against the tree.
"""
import difflib
import os
import subprocess
import tempfile
from pathlib import Path


def git(root, *args, check=True):
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip() if result.returncode == 0 else None


def base(root, given=None):
    """The commit the change is measured from, and why that one (see the module's text)."""
    given = given or os.environ.get("MUTANTS_BASE", "").strip()
    if given and set(given) != {"0"}:  # a push that made a branch has an all-zero `before`
        merge_base = git(root, "merge-base", given, "HEAD", check=False)
        if merge_base is None:
            raise SystemExit(f"the base {given} has no common history with HEAD here"
                             " (a shallow clone? the hosted workflow fetches the whole history)")
        return merge_base, f"the merge base of HEAD with {given}"
    parents = git(root, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:]
    if len(parents) > 1:
        return parents[0], "the first parent of HEAD, a merge: the last landed commit"
    merge = git(root, "rev-list", "--first-parent", "--merges", "-n", "1", "HEAD")
    if merge:
        return merge, "the newest merge on HEAD's first-parent line: the last landing"
    first = git(root, "rev-list", "--max-parents=0", "HEAD").split()[-1]
    return first, "the first commit (no merge on HEAD's first-parent line)"


def changed_files(root, since):
    """The files the working tree changes since `since`, untracked ones included."""
    tracked = git(root, "diff", "--name-only", "--no-renames", since, "--").splitlines()
    untracked = git(root, "ls-files", "--others", "--exclude-standard").splitlines()
    return sorted(set(tracked + untracked) - {""})


def renamed(root, since):
    """The files the working tree renamed since `since` (git's rename detection: at least half
    the lines kept), new path to old, so a moved file is compared with what it was."""
    moves = git(root, "diff", "--name-status", "-M", since, "--").splitlines()
    return {fields[2]: fields[1] for fields in map(str.split, moves) if fields[0].startswith("R")}


def old_text(root, since, path):
    """The file as it was at `since` ("" where it did not exist)."""
    return git(root, "show", f"{since}:{path}", check=False) or ""


def code_lines(text):
    """The lines of a Rust file with comments blanked and whitespace removed, so that line `i`
    here is line `i` of the file."""
    # Imported here: the rest of this module and its users (the docs' figures) need no pygments.
    from pygments.lexers.rust import RustLexer
    from pygments.token import Comment, String
    kept = []
    # stripnl=False: the lexer would drop leading newlines, and number the lines from there.
    for token, value in RustLexer(stripnl=False, ensurenl=False).get_tokens(text):
        kept.append("\n" * value.count("\n") if token in Comment or token in String.Doc
                    else value)
    return ["".join(line.split()) for line in "".join(kept).split("\n")]


def touched_lines(old, new):
    """The 1-based lines of `new` whose code is not in `old`: added or changed, not blank once
    comments are left out. A deleted line has no line of its own in `new` (cargo-mutants'
    `--in-diff` counts added lines only); the sweep judges what is left around it."""
    before, after = code_lines(old), code_lines(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [line + 1 for tag, _, _, first, end in matcher.get_opcodes() if tag != "equal"
            for line in range(first, end) if after[line]]


def as_diff(path, text, lines):
    """A unified diff that adds `lines` (1-based) of `text` to the file at `path`: what
    cargo-mutants' `--in-diff` reads as the touched lines."""
    real = text.split("\n")
    hunks, run = [], []
    for line in lines + [None]:
        if run and line != run[-1] + 1:
            hunks.append(f"@@ -{run[0] - 1},0 +{run[0]},{len(run)} @@\n"
                         + "".join(f"+{real[n - 1]}\n" for n in run))
            run = []
        if line is not None:
            run.append(line)
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(hunks) if hunks else ""


def self_test():
    old = 'fn f(x: u32) -> u32 {\n    // one\n    let s = "a // b";\n    x + 1\n}\n'
    # Comments, doc comments, blank lines and spacing touch no code.
    assert touched_lines(old, old.replace("// one", "// two")) == []
    assert touched_lines(old, "/// f.\n" + old) == []
    assert touched_lines(old, old.replace("x + 1", "x  +  1\n\n")) == []
    assert touched_lines(old, old.replace("    x + 1", "    /* a\n /* b */ c */ x + 1")) == []
    # Code does, also where it looks like a comment inside a string, or shares a line with one.
    assert touched_lines(old, old.replace("a // b", "a // c")) == [3]
    assert touched_lines(old, old.replace("x + 1", "x + 2 // two")) == [4]
    assert touched_lines(old, old.replace("    x + 1", "    let y = 2;\n    x + y")) == [4, 5]
    assert touched_lines("", old) == [1, 3, 4, 5]
    assert touched_lines(old, old.replace("    let s = \"a // b\";\n", "")) == []
    text = "a\nb\nc\nd\n"
    assert as_diff("p.rs", text, [1, 2, 4]) == \
        "--- a/p.rs\n+++ b/p.rs\n@@ -0,0 +1,2 @@\n+a\n+b\n@@ -3,0 +4,1 @@\n+d\n"
    assert as_diff("p.rs", text, []) == ""
    self_test_base()
    print("changed_lines self-test: the touched lines, their diff and the bases passed")


def self_test_base():
    """The bases of a history made in a scratch repository: commits, a landing, commits after."""
    with tempfile.TemporaryDirectory(prefix="changed-lines-") as root:
        def commit(*args):
            subprocess.run(["git", "-c", "user.name=self-test", "-c", "user.email=self-test@invalid",
                            *args], cwd=root, check=True, capture_output=True)
            return git(root, "rev-parse", "HEAD", check=False)
        commit("init", "-q")
        first = commit("commit", "-q", "--allow-empty", "-m", "first")
        second = commit("commit", "-q", "--allow-empty", "-m", "second")
        assert base(root, "") == (first, "the first commit (no merge on HEAD's first-parent line)")
        main = git(root, "rev-parse", "--abbrev-ref", "HEAD")
        commit("checkout", "-q", "-b", "change")
        commit("commit", "-q", "--allow-empty", "-m", "change")
        commit("checkout", "-q", main)
        landing = commit("merge", "-q", "--no-ff", "-m", "land", "change")
        assert base(root, "")[0] == second
        commit("commit", "-q", "--allow-empty", "-m", "after the landing")
        assert base(root, "")[0] == landing
        # A given base: its merge base with HEAD; a push's all-zero `before` is none.
        assert base(root, first)[0] == first
        assert base(root, "change")[0] == git(root, "rev-parse", "change")
        assert base(root, "0" * 40)[0] == landing
        # A moved file is the file it was, with its edits; a new one is not a move.
        lines = "".join(f"line {n}\n" for n in range(20))
        Path(root, "old.rs").write_text(lines)
        commit("add", "old.rs")
        moved = commit("commit", "-q", "-m", "a file")
        commit("mv", "old.rs", "new.rs")
        Path(root, "new.rs").write_text(lines + "one more\n")
        Path(root, "other.rs").write_text("fn f() {}\n")
        commit("add", "-A")
        assert renamed(root, moved) == {"new.rs": "old.rs"}


if __name__ == "__main__":
    self_test()
