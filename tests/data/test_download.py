"""``capeval data download``: a local http.server stands in for the mirror; no internet."""
from __future__ import annotations

import functools
import hashlib
import io
import os
import stat
import tarfile
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from capeval import data
from capeval.data import download as dl
from capeval.errors import ExternalToolError, InputError

FILES = {"a.txt": b"alpha\n", "sub/b.txt": b"beta beta\n"}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def serve():
    servers = []

    def start(directory):
        handler = functools.partial(_Quiet, directory=str(directory))
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A mirror with one folder 'toy' and a manifest that lists it."""
    mirror = tmp_path / "mirror"
    for rel, content in FILES.items():
        (mirror / "toy" / rel).parent.mkdir(parents=True, exist_ok=True)
        (mirror / "toy" / rel).write_bytes(content)
    manifest = {"toy": {rel: hashlib.sha256(c).hexdigest() for rel, c in FILES.items()}}
    monkeypatch.setattr(dl, "packaged_manifest", lambda: manifest)
    return mirror


def test_download_files_and_verify(toy, serve, tmp_path):
    url = serve(toy)
    dest = tmp_path / "cache"
    written = dl.download("toy", dest, url)
    assert sorted(p.relative_to(dest).as_posix() for p in written) == ["toy/a.txt", "toy/sub/b.txt"]
    assert (dest / "toy/sub/b.txt").read_bytes() == FILES["sub/b.txt"]
    assert "./sub/b.txt" in (dest / "toy/SHA256SUMS").read_text()
    # files that already verify are not fetched again: the mirror can disappear
    for p in (toy / "toy").rglob("*.txt"):
        p.unlink()
    assert len(dl.download("toy", dest, url)) == 2
    assert not list(dest.rglob("*.part"))


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_downloaded_files_follow_the_umask_not_0600(toy, serve, tmp_path):
    old = os.umask(0o022)  # the test process's umask; restored below
    try:
        dest = tmp_path / "perm"
        for p in dl.download("toy", dest, serve(toy)):
            assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
    finally:
        os.umask(old)


def test_checksum_mismatch_removes_file_and_names_it(toy, serve, tmp_path):
    (toy / "toy/a.txt").write_bytes(b"tampered\n")
    dest = tmp_path / "cache"
    with pytest.raises(InputError, match=r"toy/a.txt \(downloaded sha256"):
        dl.download("toy", dest, serve(toy))
    assert not (dest / "toy/a.txt").exists() and (dest / "toy/sub/b.txt").exists()


def test_http_error_and_bad_scheme(toy, serve, tmp_path):
    (toy / "toy/a.txt").unlink()
    with pytest.raises(ExternalToolError, match="toy/a.txt failed"):
        dl.download("toy", tmp_path / "c", serve(toy))
    with pytest.raises(InputError, match="scheme"):
        dl.download("toy", tmp_path / "c", "ftp://example.org/data")
    with pytest.raises(InputError, match="unknown dataset 'zzz'"):
        dl.download("zzz", tmp_path / "c", "http://127.0.0.1:1")


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tf:
        for info, payload in members:
            tf.addfile(info, io.BytesIO(payload) if payload is not None else None)


def _file(name, payload):
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    return info, payload


@pytest.mark.parametrize("kind", [".tar.gz", ".zip"])
def test_download_archive(toy, serve, tmp_path, kind):
    arc = toy / f"toy{kind}"
    if kind == ".zip":
        with zipfile.ZipFile(arc, "w") as zf:
            for rel, c in FILES.items():
                zf.writestr(f"toy/{rel}", c)
    else:
        _tar(arc, [_file(f"toy/{rel}", c) for rel, c in FILES.items()])
    dest = tmp_path / "cache"
    written = dl.download("toy", dest, serve(toy), archive=kind)
    assert len(written) == 2 and (dest / "toy/a.txt").read_bytes() == FILES["a.txt"]
    assert not (dest / f"toy{kind}").exists()


def _link(name, target, kind):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


@pytest.mark.parametrize("member", [
    _file("../evil.txt", b"x"),
    _file("toy/../../evil.txt", b"x"),
    _file("/tmp/capeval-evil.txt", b"x"),
    _link("toy/link", "/etc/passwd", tarfile.SYMTYPE),
    _link("toy/hard", "../../etc/passwd", tarfile.LNKTYPE),
], ids=["dotdot", "nested-dotdot", "absolute", "symlink", "hardlink"])
def test_malicious_tar_is_refused_before_writing(tmp_path, member):
    arc = tmp_path / "bad.tar.gz"
    _tar(arc, [_file("toy/ok.txt", b"fine"), member])
    dest = tmp_path / "out"
    with pytest.raises(InputError, match=r"bad.tar.gz: member '.*'"):
        dl.safe_extract(arc, dest)
    assert not any(dest.iterdir())  # checked before anything is written
    assert not (tmp_path / "evil.txt").exists()


def test_malicious_zip_is_refused(tmp_path):
    arc = tmp_path / "bad.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        zf.writestr("toy/ok.txt", "fine")
        zf.writestr("../evil.txt", "x")
    with pytest.raises(InputError, match="'../evil.txt' would escape"):
        dl.safe_extract(arc, tmp_path / "out")
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as zf:
        info = zipfile.ZipInfo("toy/link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(InputError, match="symlink"):
        dl.safe_extract(link, tmp_path / "out2")
    assert not (tmp_path / "evil.txt").exists()


def test_download_refuses_malicious_archive(toy, serve, tmp_path):
    _tar(toy / "toy.tar.gz", [_file("toy/a.txt", FILES["a.txt"]), _file("../../escape.txt", b"x")])
    with pytest.raises(InputError, match="escape"):
        dl.download("toy", tmp_path / "cache", serve(toy), archive=".tar.gz")
    assert not list(tmp_path.rglob("escape.txt"))


@pytest.mark.data
def test_download_real_folders_from_local_mirror(data_dir, serve, tmp_path):
    """The packaged manifest matches the team data: download two benchmarks through http
    and load identical tables from the copy."""
    dest = tmp_path / "cache"
    url = serve(data_dir)
    dl.download("foil-sample", dest, url)
    dl.download("abstract50s", dest, url)
    for name in ("foil-sample", "abstract50s"):
        a, b = data.load(name, root=data_dir), data.load(name, root=dest)
        assert a.candidates_a == b.candidates_a and a.references == b.references
        assert (a.labels == b.labels).all()


def test_public_origin_download(toy, serve, tmp_path, monkeypatch):
    """Without a mirror each file comes from its pinned GitHub origin; a file without one
    (repaired or derived by the team) is reported, not silently skipped."""
    gh = tmp_path / "gh"
    (gh / "owner/repo/0123abc/data").mkdir(parents=True)
    (gh / "owner/repo/0123abc/data/a file.txt").write_bytes(FILES["a.txt"])
    monkeypatch.setattr(dl, "packaged_sources", lambda: {"toy": {"a.txt": "owner/repo@0123abc:data/a file.txt"}})
    monkeypatch.setattr(dl, "GITHUB_RAW", serve(gh))
    dest = tmp_path / "cache"
    with pytest.raises(InputError, match=r"toy/sub/b.txt \(repaired or derived.*use --base-url"):
        dl.download("toy", dest)
    assert (dest / "toy/a.txt").read_bytes() == FILES["a.txt"]
    with pytest.raises(InputError, match="--archive needs --base-url"):
        dl.download("toy", dest, archive=".tar.gz")


def test_packaged_sources_are_pinned_and_listed():
    from capeval.data.checksums import packaged_manifest, packaged_sources

    manifest = packaged_manifest()
    for folder, files in packaged_sources().items():
        for rel, ref in files.items():
            assert rel in manifest[folder]
            repo_commit, path = ref.split(":", 1)
            repo, commit = repo_commit.split("@")
            assert repo.count("/") == 1 and len(commit) == 40 and int(commit, 16) >= 0 and path
    url = dl.public_url("foil_sample_only", "annotation.txt")
    assert url == ("https://raw.githubusercontent.com/foilUnitn/foilUnitn.github.io/"
                   "f6a6f420ca34d6b2fde51fe874c9d827b9c88fad/content/annotation.txt")
    assert dl.public_url("flickr8k", "Flickr8k_text/CrowdFlowerAnnotations.txt") is None  # repaired


@pytest.mark.data
def test_download_foil_from_public_layout(data_dir, serve, tmp_path, monkeypatch):
    """Lay the real files out as GitHub raw paths from sources.json, then download without a mirror."""
    from capeval.data.checksums import packaged_sources

    gh = tmp_path / "gh"
    for rel, ref in packaged_sources()["foil_sample_only"].items():
        repo_commit, path = ref.split(":", 1)
        repo, commit = repo_commit.split("@")
        target = gh / repo / commit / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((data_dir / "foil_sample_only" / rel).read_bytes())
    monkeypatch.setattr(dl, "GITHUB_RAW", serve(gh))
    dest = tmp_path / "cache"
    assert len(dl.download("foil-sample", dest)) == 3
    assert data.load("foil-sample", root=dest).candidates_b == data.load("foil-sample", root=data_dir).candidates_b


# ----------------------------------------------------------------------------------------
# Tampering and data loss: packaged checksums are the only trust root; archives stay in
# their folder; nothing verified is ever overwritten by, or lost to, a bad download.
# ----------------------------------------------------------------------------------------
OTHER = {"x.txt": b"other dataset\n"}


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Mirror + packaged manifest with folders 'toy' and 'other'; checksums patched in both the
    download and the verification module."""
    from capeval.data import checksums

    mirror = tmp_path / "mirror"
    for folder, files in (("toy", FILES), ("other", OTHER)):
        for rel, content in files.items():
            (mirror / folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (mirror / folder / rel).write_bytes(content)
    manifest = {"toy": {r: hashlib.sha256(c).hexdigest() for r, c in FILES.items()},
                "other": {r: hashlib.sha256(c).hexdigest() for r, c in OTHER.items()}}
    monkeypatch.setattr(dl, "packaged_manifest", lambda: manifest)
    monkeypatch.setattr(checksums, "packaged_manifest", lambda: manifest)
    return mirror


def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _no_staging_left(dest):
    assert not [p for p in dest.iterdir() if p.name.startswith(".capeval-staging")]
    assert not list(dest.rglob("*.part"))


def test_archive_touching_another_folder_is_refused(two, serve, tmp_path):
    dest = tmp_path / "cache"
    url = serve(two)
    dl.download("other", dest, url)
    before = _snapshot(dest)
    # A crafted archive for 'toy' that would replace 'other' and its checksum file.
    _tar(two / "toy.tar.gz", [_file("toy/a.txt", FILES["a.txt"]), _file("other/x.txt", b"evil\n"),
                              _file("other/SHA256SUMS", (hashlib.sha256(b"evil\n").hexdigest() + "  ./x.txt\n").encode())])
    with pytest.raises(InputError, match=r"toy.tar.gz: member 'other/x.txt' lies outside the folder toy/"):
        dl.download("toy", dest, url, archive=".tar.gz")
    assert _snapshot(dest) == before
    _no_staging_left(dest)


def test_verify_ignores_a_forged_sha256sums_on_disk(two, serve, tmp_path):
    from capeval.cli.main import app
    from capeval.data.checksums import check_folder
    from typer.testing import CliRunner

    dest = tmp_path / "cache"
    dl.download("other", dest, serve(two))
    assert check_folder(dest, "other").status == "ok"
    (dest / "other/x.txt").write_bytes(b"evil\n")
    (dest / "other/SHA256SUMS").write_text(hashlib.sha256(b"evil\n").hexdigest() + "  ./x.txt\n")
    c = check_folder(dest, "other")
    assert c.mismatch == ["x.txt"] and c.source == "manifest"
    res = CliRunner().invoke(app, ["data", "verify", "other", "--root", str(dest)])
    assert res.exit_code == 1 and "MISMATCH other/x.txt" in res.output and "packaged checksums" in res.output
    # a folder capeval has no checksums for is not "ok" because it carries its own file
    (dest / "mine").mkdir()
    (dest / "mine/SHA256SUMS").write_text(hashlib.sha256(b"").hexdigest() + "  ./e.txt\n")
    (dest / "mine/e.txt").write_bytes(b"")
    assert check_folder(dest, "mine").status == "no packaged checksums"


@pytest.mark.parametrize("force", [False, True])
def test_bad_mirror_never_overwrites_or_deletes_verified_files(two, serve, tmp_path, force):
    dest = tmp_path / "cache"
    dl.download("toy", dest, serve(two))
    good = _snapshot(dest)
    bad_mirror = tmp_path / "bad"
    for rel in FILES:
        (bad_mirror / "toy" / rel).parent.mkdir(parents=True, exist_ok=True)
        (bad_mirror / "toy" / rel).write_bytes(b"tampered\n")
    # Without --force nothing is fetched (all files verify); with it every download is bad.
    if force:
        with pytest.raises(InputError, match="the verified copy in place was kept"):
            dl.download("toy", dest, serve(bad_mirror), force=True)
    else:
        assert len(dl.download("toy", dest, serve(bad_mirror))) == 2
    assert _snapshot(dest) == good
    _no_staging_left(dest)


@pytest.mark.parametrize("force", [False, True])
def test_bad_archive_never_overwrites_or_deletes_verified_files(two, serve, tmp_path, force):
    dest = tmp_path / "cache"
    dl.download("toy", dest, serve(two))
    (dest / "toy/sub/b.txt").unlink()  # one file missing, so the archive is fetched even without --force
    good = _snapshot(dest)
    _tar(two / "toy.tar.gz", [_file(f"toy/{rel}", b"tampered\n") for rel in FILES])
    with pytest.raises(InputError, match=r"toy/sub/b.txt \(downloaded sha256"):
        dl.download("toy", dest, serve(two), archive=".tar.gz", force=force)
    assert _snapshot(dest) == good  # a.txt verified before: kept byte for byte; b.txt not invented
    # a hostile archive fails before anything is extracted, also under --force
    _tar(two / "toy.tar.gz", [_file("toy/a.txt", b"tampered\n"), _file("toy/../../escape.txt", b"x")])
    with pytest.raises(InputError, match="escape"):
        dl.download("toy", dest, serve(two), archive=".tar.gz", force=True)
    assert _snapshot(dest) == good
    _no_staging_left(dest)


def test_failed_fetch_midway_leaves_verified_files(two, serve, tmp_path):
    dest = tmp_path / "cache"
    dl.download("toy", dest, serve(two))
    good = _snapshot(dest)
    (two / "toy/sub/b.txt").unlink()  # 404 on the second file of a forced re-fetch
    with pytest.raises(ExternalToolError, match="sub/b.txt failed"):
        dl.download("toy", dest, serve(two), force=True)
    assert _snapshot(dest) == good
    _no_staging_left(dest)


def test_good_download_replaces_a_bad_local_file(two, serve, tmp_path):
    dest = tmp_path / "cache"
    dl.download("toy", dest, serve(two))
    (dest / "toy/a.txt").write_bytes(b"corrupted locally\n")
    assert len(dl.download("toy", dest, serve(two))) == 2
    assert (dest / "toy/a.txt").read_bytes() == FILES["a.txt"]
    _no_staging_left(dest)


# ----------------------------------------------------------------------------------------
# Limits: size, time and decompression ratio are bounded; nothing partial is left behind.
# ----------------------------------------------------------------------------------------
from http.server import BaseHTTPRequestHandler  # noqa: E402


def _hostile(kind):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            import time as _t

            if kind == "drip-head":  # the status line and headers, one byte per 0.2 s
                try:
                    for byte in b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nX-Pad: " + b"x" * 200:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        _t.sleep(0.2)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return
            self.send_response(200)
            if kind == "declared":
                self.send_header("Content-Length", str(10 << 30))
            self.end_headers()
            try:
                if kind == "endless":
                    while True:
                        self.wfile.write(b"x" * 65536)
                elif kind == "drip":
                    for _ in range(100):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        _t.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return H


@pytest.fixture
def hostile():
    servers = []

    def start(kind):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _hostile(kind))
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_endless_stream_is_cut_at_the_size_limit(two, hostile, tmp_path, monkeypatch):
    monkeypatch.setattr(dl, "MAX_DOWNLOAD_BYTES", 1 << 20)
    dest = tmp_path / "cache"
    with pytest.raises(ExternalToolError, match=r"over the 1048576-byte limit"):
        dl.download("toy", dest, hostile("endless"))
    _no_staging_left(dest)


def test_declared_oversize_is_refused_before_reading(two, hostile, tmp_path):
    with pytest.raises(ExternalToolError, match=r"declares 10737418240 bytes"):
        dl.download("toy", tmp_path / "cache", hostile("declared"))


def test_dripping_server_hits_the_wall_clock_limit(two, hostile, tmp_path, monkeypatch):
    import time

    monkeypatch.setattr(dl, "MAX_SECONDS", 1.0)
    start = time.monotonic()
    with pytest.raises(ExternalToolError, match=r"not finished within 1 s"):
        dl.download("toy", tmp_path / "cache", hostile("drip"), timeout=5)
    assert time.monotonic() - start < 5
    _no_staging_left(tmp_path / "cache")


def test_dripped_status_line_and_headers_hit_the_wall_clock_limit(two, hostile, tmp_path, monkeypatch):
    """The deadline covers the whole exchange, not only the body: a probe held _fetch for 87 s
    against 3 by dripping the headers."""
    import time

    monkeypatch.setattr(dl, "MAX_SECONDS", 1.0)
    start = time.monotonic()
    with pytest.raises(ExternalToolError, match=r"not finished within 1 s"):
        dl.download("toy", tmp_path / "cache", hostile("drip-head"), timeout=5)
    assert time.monotonic() - start < 4
    _no_staging_left(tmp_path / "cache")


def test_decompression_bomb_and_oversize_archives_are_refused(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.tar.gz"
    _tar(bomb, [_file("toy/zeros.txt", b"\0" * (8 << 20))])  # 8 MiB of zeros: ~8 KiB packed
    with pytest.raises(InputError, match=r"bomb.tar.gz: unpacks to .* over 100x"):
        dl.safe_extract(bomb, tmp_path / "out")
    assert not (tmp_path / "out" / "toy").exists()
    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w") as zf:
        zf.writestr("toy/a.txt", bytes(range(256)) * 40)
    monkeypatch.setattr(dl, "MAX_UNPACKED_BYTES", 5000)
    with pytest.raises(InputError, match=r"big.zip: members up to 'toy/a.txt' unpack to over 5000 bytes"):
        dl.safe_extract(big, tmp_path / "out2")


# ----------------------------------------------------------------------------------------
# Archive limits and collisions (issue 28, item 16): named errors, bounded memory.
# ----------------------------------------------------------------------------------------
def test_huge_member_name_is_refused_before_it_is_read(tmp_path):
    import resource

    arc = tmp_path / "long.tar"
    with tarfile.open(arc, "w", format=tarfile.GNU_FORMAT) as tf:
        info = tarfile.TarInfo("toy/" + "n" * 300_000)  # a GNU long-name header of 300 KB
        tf.addfile(info, io.BytesIO(b""))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match="long-name header of .* bytes, over the 4096-byte name limit") as e:
        dl.safe_extract(arc, tmp_path / "out")
    assert len(str(e.value)) < 300
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB
    assert not any((tmp_path / "out").iterdir())


def test_member_count_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(dl, "MAX_MEMBERS", 50)
    arc = tmp_path / "many.tar"
    with tarfile.open(arc, "w") as tf:
        for i in range(51):
            tf.addfile(tarfile.TarInfo(f"toy/f{i}"), io.BytesIO(b""))
    with pytest.raises(InputError, match="over 50 members"):
        dl.safe_extract(arc, tmp_path / "out")
    zarc = tmp_path / "many.zip"
    with zipfile.ZipFile(zarc, "w") as zf:
        for i in range(51):
            zf.writestr(f"toy/f{i}", b"")
    with pytest.raises(InputError, match="over 50 members"):
        dl.safe_extract(zarc, tmp_path / "out2")


@pytest.mark.parametrize("members", [[("toy", b"x")], [(".", b"x")], [("toy/a", b"x"), ("toy/a/b", b"y")]])
def test_members_colliding_with_folders_are_named(two, serve, tmp_path, members):
    src = tmp_path / "srv"
    src.mkdir()
    with tarfile.open(src / "toy.tar", "w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with pytest.raises(InputError, match=r"toy\.tar: member '(toy|\.|toy/a/b)'"):
        dl.download("toy", tmp_path / "cache", serve(src), archive=".tar")
    _no_staging_left(tmp_path / "cache")


def test_staging_left_by_a_killed_download_is_removed(two, serve, tmp_path):
    import subprocess
    import sys

    dest = tmp_path / "cache"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = dest / f"{dl.STAGING_PREFIX}toy-abc"
    (left / "files").mkdir(parents=True)
    (left / "files" / "big.part").write_bytes(b"x" * 1000)
    (left / "owner").write_text(dead.stdout)
    mine = dest / f"{dl.STAGING_PREFIX}toy-live"
    mine.mkdir()
    (mine / "owner").write_text(f"{os.getppid()}\n")  # a live process: a download under way
    assert dl.stale_staging(dest) == [left]
    from typer.testing import CliRunner

    from capeval.cli.main import app

    res = CliRunner().invoke(app, ["data", "verify", "toy", "--root", str(dest)])
    assert "interrupted download" in res.output and left.name in res.output
    logs = []
    dl.download("toy", dest, serve(two), log=logs.append)
    assert not left.exists() and mine.exists()
    assert any("interrupted download" in m for m in logs)
