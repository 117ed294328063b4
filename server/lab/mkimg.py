#!/usr/bin/env python3
"""mkimg.py writes a one-layer image as a docker-archive tarball, the format
`ctr images import` reads, from files on this machine: the lab needs no registry.

usage: mkimg.py --tag REPO:TAG --cmd ARG [--cmd ARG]... [--arch ARCH]
                [--dir PATH]... [--file PATH=SRC]... [--link PATH=TARGET]... OUT.tar

Entries go into the layer in the order given; the output is byte-for-byte
reproducible (mtime 0, uid 0), so the image ID only changes when a file does.
"""
import argparse
import hashlib
import io
import json
import os
import sys
import tarfile


class Entry(argparse.Action):
    """Keeps --dir, --file and --link in one ordered list."""

    def __call__(self, parser, ns, value, option=None):
        kind = option.lstrip("-")
        if kind == "dir":
            path, src = value, None
        else:
            path, sep, src = value.partition("=")
            if not sep or not path or not src:
                parser.error(f"--{kind} wants PATH=VALUE, got {value!r}")
        ns.entries.append((kind, path.strip("/"), src))


def layer(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for kind, path, src in entries:
            ti = tarfile.TarInfo(path)
            ti.mtime = 0
            ti.uid = ti.gid = 0
            if kind == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o1777 if path == "tmp" else 0o755
                t.addfile(ti)
            elif kind == "link":
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, src, 0o777
                t.addfile(ti)
            else:
                with open(src, "rb") as f:
                    data = f.read()
                ti.size, ti.mode = len(data), 0o755
                t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def archive(out, tag, arch, cmd, layer_bytes, entrypoint=None):
    lsum = hashlib.sha256(layer_bytes).hexdigest()
    cfg = {"Cmd": cmd, "Env": ["PATH=/bin"]}
    if entrypoint:
        # A pod's args replace Cmd and keep Entrypoint (agnhost's image: /agnhost).
        cfg["Entrypoint"] = entrypoint
    config = json.dumps({
        "architecture": arch,
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + lsum]},
    }, sort_keys=True).encode()
    csum = hashlib.sha256(config).hexdigest()
    manifest = json.dumps([{
        "Config": csum + ".json",
        "RepoTags": [tag],
        "Layers": [lsum + "/layer.tar"],
    }]).encode()
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in ((csum + ".json", config), (lsum + "/layer.tar", layer_bytes),
                           ("manifest.json", manifest)):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
            t.addfile(ti, io.BytesIO(data))
    os.replace(tmp, out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tag", required=True)
    p.add_argument("--arch", default="amd64")
    p.add_argument("--cmd", action="append", required=True, help="one argument of the command; repeat")
    p.add_argument("--entrypoint", action="append", help="one argument of the entrypoint; repeat")
    p.set_defaults(entries=[])
    for kind in ("dir", "file", "link"):
        p.add_argument("--" + kind, action=Entry, metavar="PATH" if kind == "dir" else "PATH=VALUE")
    p.add_argument("out")
    a = p.parse_args(argv)
    if not a.entries:
        p.error("an image needs at least one --dir, --file or --link")
    try:
        archive(a.out, a.tag, a.arch, a.cmd, layer(a.entries), a.entrypoint)
    except OSError as e:
        print(f"mkimg: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
