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
    # CloudTrail delivery file 2 (+2 from its gz copy) + LookupEvents 6 + GCP 9 + S3 5
    assert len(loaded["calls"]) == 24 and len(loaded["access"]) == 24
    assert loaded.quarantine.line_no.tolist() == [3]  # the malformed Codex sample's last line
