"""Rule `publish_upload`: the published folder to the Hugging Face Hub, only where the
config says so (`publish.upload: true`, `publish.repo_id`); otherwise a dry run. Either way
`<outdir>/publish_upload.txt` lists every file that goes (or would go) with its size."""

from __future__ import annotations

import json
from pathlib import Path

from workflow_scripts.common.files import write_text
from workflow_scripts.common.logs import job_log

# Snakemake's mark of a finished folder output: not the dataset's
LEFT_HERE = ".snakemake_timestamp"


def listing(folder: Path) -> list[tuple[str, int]]:
    """Every file of the folder (but Snakemake's mark), by its path in the repository, with
    its size in bytes."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != LEFT_HERE)
    return [(path.relative_to(folder).as_posix(), path.stat().st_size) for path in files]


def upload(folder: Path, repo_id: str, private: bool) -> str:
    """Send the folder to the dataset repository `repo_id` (made if need be); its commit."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        repo_type="dataset",
        ignore_patterns=[LEFT_HERE],
        commit_message="VGI-Bench study: videos, checkpoints, verdicts and labels",
    )
    return commit.commit_url


def upload_job(smk) -> None:
    """Rule `publish_upload`: see the module."""
    folder, repo_id, send = Path(smk.input[0]), smk.params.repo_id, smk.params.upload
    with job_log(smk):
        files = listing(folder)
        total = sum(size for _, size in files)
        target = repo_id or "(publish.repo_id not set)"
        if send:
            commit = upload(folder, repo_id, smk.params.private)
            outcome = f"sent to https://huggingface.co/datasets/{repo_id}: {commit}"
        else:
            outcome = (
                f"dry run, nothing sent: these would go to {target}; set "
                "publish.upload: true (and publish.repo_id) to send them"
            )
        lines = [
            outcome,
            f"{len(files)} files, {total} bytes",
            *(f"{size}\t{name}" for name, size in files),
        ]
        write_text(smk.output[0], "\n".join(lines) + "\n")
        print(json.dumps({"files": len(files), "bytes": total, "sent": send}))
