"""Zip archives of transcripts the importer meets in a user's backups: cut ZIP64 and
data-descriptor archives (a download stopped short), every form a transcript member's name
takes, and members it does not read (nested archives, macOS metadata), named and counted."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from support.transcripts import call_line, jsonl, result_line
from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.sources.claude_code.archives import no_directory


def _session(name: str, calls: int, session: str | None = "") -> bytes:
    """A session of ``calls`` calls with results of random hex (deflate barely shrinks it);
    ``session``: the id its lines name (default ``name``; None: none, as a subagent file's)."""
    rng = random.Random(name)
    lines = []
    for i in range(calls):
        stamp = f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z"
        sid = name if session == "" else session
        lines.append(call_line(f"toolu_{name}{i}", stamp, f"msg_{name}{i}", session=sid))
        lines.append(result_line(f"toolu_{name}{i}", stamp, rng.randbytes(150).hex()))
    return jsonl(lines).encode()


class _Pipe(io.RawIOBase):
    """An unseekable sink: zipfile writes each member's sizes after its data (a descriptor)."""

    def __init__(self) -> None:
        super().__init__()
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.data += b
        return len(b)


def _archive(members: dict[str, bytes], method: int, zip64: bool, piped: bool) -> bytes:
    sink: io.BytesIO | _Pipe = _Pipe() if piped else io.BytesIO()
    with zipfile.ZipFile(sink, "w", method) as archive:
        for name, data in members.items():
            with archive.open(name, "w", force_zip64=zip64) as member:
                member.write(data)
    return bytes(sink.data) if isinstance(sink, _Pipe) else sink.getvalue()


@pytest.mark.parametrize(
    ("method", "zip64", "piped"),
    [
        (zipfile.ZIP_DEFLATED, True, False),
        (zipfile.ZIP_STORED, True, False),
        (zipfile.ZIP_DEFLATED, False, True),
        (zipfile.ZIP_DEFLATED, True, True),
        (zipfile.ZIP_STORED, False, True),
    ],
    ids=["zip64", "zip64-stored", "descriptor", "descriptor-zip64", "descriptor-stored"],
)
def test_a_cut_zip64_or_descriptor_archive_keeps_every_member_before_the_cut(
    tmp_path: Path, method: int, zip64: bool, piped: bool
) -> None:
    """A cut archive's members are found header after header; the search stopped at the first
    ZIP64 header (sizes 0xFFFFFFFF, the real ones in its extra field) or one whose sizes follow
    its data, so a ZIP64 archive read its first member past its end ('cut short', most of its
    calls lost) and a piped one read it as empty, without a word, the members after it not at
    all. Now the ZIP64 sizes are read and a descriptor's member passed by where its data ends:
    every member before the cut is read whole, the one cut up to the cut, counted damaged."""
    members = {f"p/{n}.jsonl": _session(n, 60) for n in ("a", "b", "c")}
    whole = _archive(members, method, zip64, piped)
    cut = tmp_path / "cut.zip"
    third = whole.rindex(b"PK\x03\x04")
    cut.write_bytes(whole[: (third + len(whole)) // 2])  # inside c.jsonl
    records, report = import_transcripts([cut])
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("a", "b"):
        (plain / f"{name}.jsonl").write_bytes(members[f"p/{name}.jsonl"])
    expected, _ = import_transcripts([plain])
    got = [r.as_dict() for r in records if r.session_id in ("a", "b")]
    assert got == [r.as_dict() for r in expected]  # a and b whole, the same values
    kept = [r for r in records if r.session_id == "c"]
    member = f"{cut}!p/c.jsonl"
    assert report.unreadable_files == [
        (str(cut), no_directory(3)),
        (
            member,
            f"zip member cut short after line {report.lines - 240:,} "
            "(the lines before it were read)",
        ),
    ]
    assert report.damaged_files == [member]
    assert 10 < len(kept) < 60 and all(r.output_bytes == 300 for r in kept[:-1])


def test_a_cut_in_a_descriptor_members_header_region_reads_what_is_whole(tmp_path: Path) -> None:
    """Cut just after a piped member's data, before its descriptor is whole: that member's
    text is all there and read (no CRC to check it by), counted damaged with the archive."""
    members = {"a.jsonl": _session("a", 20), "b.jsonl": _session("b", 20)}
    whole = _archive(members, zipfile.ZIP_DEFLATED, False, True)
    second = whole.index(b"PK\x03\x04", 4)
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole[: second - 8])  # inside a's 16-byte descriptor
    records, report = import_transcripts([cut])
    assert len(records) == 20 and {r.session_id for r in records} == {"a"}
    assert report.unreadable_files[0] == (str(cut), no_directory(1))
    assert report.damaged_files == [str(cut)]


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    return _archive(members, zipfile.ZIP_DEFLATED, False, False)


def test_every_transcript_member_name_form_is_read_and_the_rest_counted(tmp_path: Path) -> None:
    """Members named ``S.JSONL`` (a case-folding copy) were passed over without a word, as
    were files so named; ``sid\\subagents\\agent-x.jsonl`` (an old Windows tool's separators)
    was read as a main-agent session named by the whole path; Finder's ``__MACOSX/…/._s.jsonl``
    resource forks were read as transcripts (their binary lines skipped as invalid JSON); a zip
    inside the zip was passed over silently. Now every name form reads as the plain files, and
    the members not read are counted by kind and named (``skipped_members``)."""
    side = _session("side", 2, session=None)
    folder = tmp_path / "folder"
    (folder / "p" / "sid" / "subagents").mkdir(parents=True)
    (folder / "p" / "a.jsonl").write_bytes(_session("a", 2))
    (folder / "B.jsonl").write_bytes(_session("B", 2))
    (folder / "p" / "sid" / "subagents" / "agent-ax1.jsonl").write_bytes(side)
    expected, _ = import_transcripts([folder])
    archive = tmp_path / "backup.zip"
    archive.write_bytes(
        _zip_bytes(
            {
                "p/a.jsonl": _session("a", 2),
                "B.JSONL": _session("B", 2),
                "p\\sid\\subagents\\agent-ax1.jsonl": side,
                "__MACOSX/p/._a.jsonl": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X",
                "._B.JSONL": b"\x00\x05\x16\x07",
                "inner.zip": _zip_bytes({"c.jsonl": _session("c", 1)}),
                "p/notes.txt": b"not a transcript",
            }
        )
    )
    records, report = import_transcripts([archive])
    assert [r.as_dict() for r in records] == [r.as_dict() for r in expected]
    assert [(r.session_id, r.agent_id) for r in records if r.agent_id] == [("sid", "ax1")] * 2
    assert report.skipped == [] and report.unreadable_files == []
    assert report.skipped_members == [
        (f"{archive}!__MACOSX/p/._a.jsonl", "macOS metadata member"),
        (f"{archive}!._B.JSONL", "macOS metadata member"),
        (f"{archive}!inner.zip", "nested archive"),
    ]
    (folder / "C.JSONL").write_bytes(_session("C", 1))  # on disk too
    assert len(import_transcripts([folder])[0]) == len(expected) + 1
    only = tmp_path / "only.zip"
    only.write_bytes(_zip_bytes({"inner.zip": _zip_bytes({"c.jsonl": _session("c", 1)})}))
    records, report = import_transcripts([only])
    assert records == [] and report.skipped_members == [(f"{only}!inner.zip", "nested archive")]
    assert report.unreadable_files == [
        (
            str(only),
            "zip archive holding no transcript member (*.jsonl, *.jsonl.gz, *.jsonl.bz2, "
            "*.jsonl.xz, *.jsonl.zst) but 1 nested archive, not read (listed with the "
            "skipped members)",
        )
    ]
