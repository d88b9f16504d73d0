"""`replaybook load auto ../shared/real`: every sample file is placed by its content."""

import replaybook


def test_every_real_sample_file_gets_its_source(real_dir):
    loaded = replaybook.load(real_dir)
    files = loaded.files.assign(name=loaded.files.path.str.slice(len(str(real_dir)) + 1))
    unplaced = files[files.source.isna()]
    assert unplaced.name.tolist() == ["README.md"]  # documentation, not data
    placed = files.dropna(subset=["source"])
    by_top: dict[str, set] = {}
    for name, source in zip(placed.name, placed.source):
        by_top.setdefault(name.split("/")[0], set()).add(source)
    assert by_top["claude-code"] == {"claude-code"}
    assert by_top["codex"] == {"codex"}
    assert by_top["cloud"] == {"aws.cloudtrail", "aws.s3_access", "gcp.audit"}
    assert by_top["gateway"] == {"agentgateway", "context-forge", "docker-mcp-gateway", "gatekit", "invariant",
                                 "lasso", "mcp-http", "mcpjungle", "mxcp", "obot", "pomerium"}
    side = files[files.note.fillna("").str.startswith("side file")]
    assert len(side) == 6 and side.name.str.endswith(".meta.json").all()
    # CloudTrail delivery file 2 (its gz copy holds the same text: read once) + LookupEvents 6 +
    # GCP 9 + S3 5
    # (calls: 25 with the MCP exchange's resources/read)
    assert len(loaded["calls"]) == 25 and len(loaded["access"]) == 22
    gz = files[files.name == "cloud/111111111111_CloudTrail_eu-central-1_20171211T1505Z_A6kvhMoVeCsc7v8U.json.gz"]
    assert gz.note.tolist() == [f"same content as {real_dir}/cloud/111111111111_CloudTrail_eu-central-1_"
                                f"20171211T1505Z_A6kvhMoVeCsc7v8U.json: read once"] and gz.rows.tolist() == [0]
    assert loaded.quarantine.line_no.tolist() == [3]  # the malformed Codex sample's last line


def test_the_notes_on_edited_or_damaged_files_say_nothing_of_the_real_samples(real_dir):
    """The notes that flag an edited, merged or damaged file (lines of no Claude Code line type, a
    tool-use id naming several calls, bytes that are not UTF-8, a crash's zero fill, a cut gzip
    stream, an end before its start) fire on none of the published samples, which are none of
    those."""
    loaded = replaybook.load(real_dir)
    notes = " | ".join(loaded.files["note"].dropna())
    for words in ("no line type", "names 2 tool calls", "not UTF-8", "zero fill", "gzip stream", "ts_end before ts",
                  "archive"):
        assert words not in notes, words
    assert "zero fill" not in " ".join(loaded.quarantine["error"])


def test_a_tar_of_the_real_transcripts_is_named_not_read(real_dir, tmp_path):
    import gzip
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(real_dir / "claude-code", arcname="claude-code")
    (tmp_path / "transcripts.tar.gz").write_bytes(gzip.compress(buf.getvalue()))
    loaded = replaybook.load(tmp_path)
    assert loaded.files["note"].tolist() == [
        "a tar archive: extract it and name the files it holds (replaybook reads files, not archives)"]
    assert loaded.files["source"].isna().all() and "steps" not in loaded.results
