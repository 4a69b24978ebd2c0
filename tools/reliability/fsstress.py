#!/usr/bin/env python3
"""An fsstress-like load for a DotSafe mount, with a model to check against.

  fsstress.py run ROOT MODELDIR PROCESSES SECONDS SEED
      PROCESSES workers at once for SECONDS: each does random create/write/append/truncate/
      rename/link/unlink/mkdir/rmdir/setxattr/removexattr/read/fsync in its own folder wN,
      checking every read against its model, plus unchecked operations in the shared folder
      'shared' (only errors that the race explains are allowed there: ENOENT, EEXIST,
      ENOTEMPTY, ENOTDIR, EISDIR, EPERM for a hard link to a folder). Each worker writes its model to MODELDIR/wN.json.
  fsstress.py check ROOT MODELDIR
      After a lock and a new mount: every wN holds exactly its model (folders, files, contents,
      link counts, extended attributes); every file of the tree reads without error; link
      counts equal the names found for each inode.
Exit status 0 when everything holds; messages name the first difference.
"""
import errno, hashlib, json, os, random, sys, time, traceback

RACE = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR, errno.EPERM}


def digest(data):
    return hashlib.sha256(data).hexdigest()


class Worker:
    def __init__(self, root, index, seed):
        self.root, self.name = root, "w%d" % index
        self.rng = random.Random(seed * 1000 + index)
        self.dirs = {""}                  # relative folders, "" is wN itself
        self.paths = {}                   # relative file path -> object id
        self.objects = {}                 # object id -> {"data": bytearray, "xattrs": {}}
        self.next_object = 0
        os.mkdir(self.abs(""))

    def abs(self, rel):
        return os.path.join(self.root, self.name, rel) if rel else os.path.join(self.root, self.name)

    def new_name(self):
        folder = self.rng.choice(sorted(self.dirs))
        return os.path.join(folder, "n%d" % self.rng.randrange(40)) if folder else "n%d" % self.rng.randrange(40)

    def free_name(self):
        for _ in range(20):
            name = self.new_name()
            if name not in self.paths and name not in self.dirs:
                return name
        return None

    def some_file(self):
        return self.rng.choice(sorted(self.paths)) if self.paths else None

    def data(self):
        size = self.rng.choice([0, 1, 100, 4096, 5000, 70000, 262144, 262145, 600000])
        size = self.rng.randrange(size + 1)
        return self.rng.randbytes(size)

    def step(self):
        op = self.rng.choice(["create"] * 3 + ["write", "write", "append", "truncate", "rename", "link", "unlink",
                                               "mkdir", "rmdir", "setxattr", "removexattr", "read", "read", "fsync"])
        getattr(self, "op_" + op)()

    def op_create(self):
        name = self.free_name()
        if name is None:
            return
        data = self.data()
        with open(self.abs(name), "xb") as f:
            f.write(data)
        self.paths[name] = self.next_object
        self.objects[self.next_object] = {"data": bytearray(data), "xattrs": {}}
        self.next_object += 1

    def op_write(self):
        name = self.some_file()
        if name is None:
            return
        obj = self.objects[self.paths[name]]["data"]
        offset = self.rng.randrange(len(obj) + 300000)
        data = self.rng.randbytes(self.rng.randrange(1, 300000))
        fd = os.open(self.abs(name), os.O_WRONLY)
        try:
            os.pwrite(fd, data, offset)
        finally:
            os.close(fd)
        if len(obj) < offset:
            obj.extend(bytes(offset - len(obj)))
        obj[offset:offset + len(data)] = data

    def op_append(self):
        name = self.some_file()
        if name is None:
            return
        data = self.rng.randbytes(self.rng.randrange(1, 20000))
        with open(self.abs(name), "ab") as f:
            f.write(data)
        self.objects[self.paths[name]]["data"].extend(data)

    def op_truncate(self):
        name = self.some_file()
        if name is None:
            return
        obj = self.objects[self.paths[name]]["data"]
        size = self.rng.randrange(len(obj) + 300000)
        os.truncate(self.abs(name), size)
        if size < len(obj):
            del obj[size:]
        else:
            obj.extend(bytes(size - len(obj)))

    def op_rename(self):
        name = self.some_file()
        if name is None:
            return
        target = self.new_name() if self.rng.random() < 0.7 else self.some_file()
        if target in self.dirs or target == name:
            return
        os.rename(self.abs(name), self.abs(target))
        if self.paths.get(target) == self.paths[name]:
            # rename(2) between two names of one file does nothing
            return
        self.paths[target] = self.paths.pop(name)

    def op_link(self):
        name, target = self.some_file(), self.free_name()
        if name is None or target is None:
            return
        os.link(self.abs(name), self.abs(target))
        self.paths[target] = self.paths[name]

    def op_unlink(self):
        name = self.some_file()
        if name is None:
            return
        os.unlink(self.abs(name))
        del self.paths[name]

    def op_mkdir(self):
        name = self.free_name()
        if name is None or name.count("/") > 3:
            return
        os.mkdir(self.abs(name))
        self.dirs.add(name)

    def op_rmdir(self):
        empty = [d for d in self.dirs if d and not any(p.startswith(d + "/") for p in list(self.paths) + list(self.dirs))]
        if not empty:
            return
        folder = self.rng.choice(sorted(empty))
        os.rmdir(self.abs(folder))
        self.dirs.remove(folder)

    def op_setxattr(self):
        name = self.some_file()
        if name is None:
            return
        key, value = "user.k%d" % self.rng.randrange(4), self.rng.randbytes(self.rng.randrange(1, 200))
        os.setxattr(self.abs(name), key, value)
        self.objects[self.paths[name]]["xattrs"][key] = value.hex()

    def op_removexattr(self):
        name = self.some_file()
        if name is None:
            return
        xattrs = self.objects[self.paths[name]]["xattrs"]
        if not xattrs:
            return
        key = self.rng.choice(sorted(xattrs))
        os.removexattr(self.abs(name), key)
        del xattrs[key]

    def op_read(self):
        name = self.some_file()
        if name is None:
            return
        with open(self.abs(name), "rb") as f:
            data = f.read()
        expected = bytes(self.objects[self.paths[name]]["data"])
        if data != expected:
            raise AssertionError("%s/%s: read %d bytes that differ from the model's %d" % (self.name, name, len(data), len(expected)))

    def op_fsync(self):
        name = self.some_file()
        if name is None:
            return
        fd = os.open(self.abs(name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def shared_step(self):
        shared = os.path.join(self.root, "shared")
        a = os.path.join(shared, "s%d" % self.rng.randrange(30))
        b = os.path.join(shared, "s%d" % self.rng.randrange(30))
        op = self.rng.randrange(7)
        try:
            if op == 0:
                with open(a, "wb") as f:
                    f.write(self.rng.randbytes(self.rng.randrange(100000)))
            elif op == 1:
                os.rename(a, b)
            elif op == 2:
                os.unlink(a)
            elif op == 3:
                os.mkdir(a)
            elif op == 4:
                os.rmdir(a)
            elif op == 5:
                os.link(a, b)
            else:
                with open(a, "rb") as f:
                    f.read()
        except OSError as error:
            if error.errno not in RACE:
                raise

    def model(self):
        files = {}
        for path, obj in self.paths.items():
            o = self.objects[obj]
            files[path] = {"sha256": digest(bytes(o["data"])), "size": len(o["data"]), "object": obj,
                           "links": sum(1 for v in self.paths.values() if v == obj), "xattrs": o["xattrs"]}
        return {"dirs": sorted(self.dirs), "files": files}


def run(root, modeldir, processes, seconds, seed):
    os.makedirs(os.path.join(root, "shared"), exist_ok=True)
    children = []
    for index in range(processes):
        pid = os.fork()
        if pid == 0:
            status = 0
            worker = Worker(root, index, seed)
            end, steps = time.monotonic() + seconds, 0
            try:
                while time.monotonic() < end:
                    worker.step()
                    if worker.rng.random() < 0.3:
                        worker.shared_step()
                    steps += 1
            except Exception as error:
                print("fsstress: worker %d, step %d: %r" % (index, steps, error), file=sys.stderr)
                print(traceback.format_exc(limit=-2), file=sys.stderr, end="")
                status = 1
            with open(os.path.join(modeldir, worker.name + ".json"), "w") as f:
                json.dump(worker.model(), f)
            print("fsstress: worker %d: %d steps, %d files" % (index, steps, len(worker.paths)))
            os._exit(status)
        children.append(pid)
    failed = 0
    for pid in children:
        _, status = os.waitpid(pid, 0)
        failed |= status != 0
    return 1 if failed else 0


def check(root, modeldir):
    problems = []
    for entry in sorted(os.listdir(modeldir)):
        name = entry[:-5]
        with open(os.path.join(modeldir, entry)) as f:
            model = json.load(f)
        base = os.path.join(root, name)
        dirs, files = {""}, {}
        for folder, subfolders, names in os.walk(base):
            rel = os.path.relpath(folder, base)
            rel = "" if rel == "." else rel
            for d in subfolders:
                dirs.add(os.path.join(rel, d) if rel else d)
            for n in names:
                files[os.path.join(rel, n) if rel else n] = os.path.join(folder, n)
        if dirs != set(model["dirs"]):
            problems.append("%s: folders differ: %s" % (name, sorted(dirs ^ set(model["dirs"]))[:5]))
        if set(files) != set(model["files"]):
            problems.append("%s: files differ: %s" % (name, sorted(set(files) ^ set(model["files"]))[:5]))
        inodes = {}
        for rel, expected in model["files"].items():
            if rel not in files:
                continue
            path = files[rel]
            with open(path, "rb") as f:
                data = f.read()
            info = os.lstat(path)
            if digest(data) != expected["sha256"]:
                problems.append("%s/%s: content differs (%d bytes, model %d)" % (name, rel, len(data), expected["size"]))
            if info.st_nlink != expected["links"]:
                problems.append("%s/%s: %d links, model %d" % (name, rel, info.st_nlink, expected["links"]))
            xattrs = {k: os.getxattr(path, k).hex() for k in os.listxattr(path) if k.startswith("user.")}
            if xattrs != expected["xattrs"]:
                problems.append("%s/%s: extended attributes differ" % (name, rel))
            inodes.setdefault(expected["object"], set()).add(info.st_ino)
        for obj, numbers in inodes.items():
            if len(numbers) != 1:
                problems.append("%s: the names of one file have inodes %s" % (name, sorted(numbers)))
    # The whole tree: everything reads; link counts equal the names of each inode.
    names = {}
    for folder, _, entries in os.walk(root):
        for n in entries:
            path = os.path.join(folder, n)
            info = os.lstat(path)
            names.setdefault(info.st_ino, []).append((path, info.st_nlink))
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
    for inode, found in names.items():
        if any(nlink != len(found) for _, nlink in found):
            problems.append("inode %d: link count %d, names %d (%s)" % (inode, found[0][1], len(found), found[0][0]))
    for problem in problems[:20]:
        print("fsstress check: " + problem, file=sys.stderr)
    print("fsstress check: %d files, %d problems" % (len(names), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])))
    sys.exit(check(sys.argv[2], sys.argv[3]))
