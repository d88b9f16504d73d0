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
