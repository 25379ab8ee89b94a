# keep's live-context driver (docs/contexts.md): the vmm starts the
# interpreter as `python -c <this file> CWD` and sends it cells on stdin;
# each cell's output, results and errors go back as JSON lines on a
# duplicate of descriptor 1, ending with the cell's end line. Raw writes
# to descriptors 1 and 2 (C code, os.write) go to descriptor 2, which the
# host passes on as stderr, so they can never be taken for a frame.
def _keep_context():
    import ast
    import base64
    import builtins
    import io
    import json
    import os
    import struct
    import sys
    import traceback

    TEXT_MAX = 64 << 10  # a result's text, html, markdown, ...
    IMAGE_MAX = 4 << 20  # a figure's PNG before base64
    ctl = os.dup(1)
    os.dup2(2, 1)
    # A process a cell forks comes back from the cell as a copy of this
    # driver; it must end there, never answer or read cells.
    me = os.getpid()

    # What came down the pipe and is not taken yet: a frame is read
    # whole where it fits, not a read a field (each read is an exit of
    # the VM). Between cells it is empty, the driver waiting in read.
    inbuf = bytearray()

    def readn(n):
        while len(inbuf) < n:
            c = os.read(0, max(n - len(inbuf), 1 << 16))
            if not c:
                os._exit(0)
            inbuf.extend(c)
        b = bytes(inbuf[:n])
        del inbuf[:n]
        return b

    def send(obj):
        data = memoryview((json.dumps(obj, ensure_ascii=True) + "\n").encode())
        while data:
            data = data[os.write(ctl, data):]

    # Output is sent a line at a time (a print's text and its newline in
    # one line of ours), in the order it was written.
    pending = ["stdout", ""]

    def flush():
        if pending[1]:
            send({"type": pending[0], "text": pending[1]})
            pending[1] = ""

    def emit(obj):
        flush()
        send(obj)

    def stream(kind, s):
        if pending[0] != kind:
            flush()
            pending[0] = kind
        pending[1] += s
        cut = pending[1].rfind("\n") + 1
        if cut > 0 or len(pending[1]) > TEXT_MAX:
            if cut == 0:
                cut = len(pending[1])
            text, pending[1] = pending[1][:cut], pending[1][cut:]
            send({"type": kind, "text": text})

    class Bytes(io.RawIOBase):  # sys.stdout.buffer
        def __init__(self, kind):
            self.kind = kind

        def writable(self):
            return True

        def write(self, b):
            stream(self.kind, bytes(b).decode("utf-8", "replace"))
            return len(b)

    class Stream(io.TextIOBase):
        encoding = "utf-8"
        errors = "replace"

        def __init__(self, kind):
            self.kind = kind
            self.buffer = Bytes(kind)

        def writable(self):
            return True

        def write(self, s):
            if not isinstance(s, str):
                raise TypeError("write() argument must be str")
            if s:
                stream(self.kind, s)
            return len(s)

    def clip(s):
        return s if len(s) <= TEXT_MAX else s[:TEXT_MAX] + "\n[truncated]"

    def figure_png(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        data = buf.getvalue()
        if len(data) > IMAGE_MAX:
            return None
        return base64.b64encode(data).decode("ascii")

    def represent(value, main):
        r = {"type": "result", "is_main_result": main}
        try:
            r["text"] = clip(repr(value))
        except Exception as e:
            r["text"] = "<repr failed: %s>" % type(e).__name__
        for attr, key in (("_repr_html_", "html"),
                          ("_repr_markdown_", "markdown"),
                          ("_repr_svg_", "svg"),
                          ("_repr_latex_", "latex")):
            f = getattr(value, attr, None)
            if callable(f):
                try:
                    v = f()
                    if isinstance(v, str):
                        r[key] = clip(v)
                except Exception:
                    pass
        for attr, key in (("_repr_png_", "png"), ("_repr_jpeg_", "jpeg")):
            f = getattr(value, attr, None)
            if callable(f):
                try:
                    v = f()
                    if isinstance(v, bytes) and len(v) <= IMAGE_MAX:
                        r[key] = base64.b64encode(v).decode("ascii")
                except Exception:
                    pass
        f = getattr(value, "_repr_json_", None)
        if callable(f):
            try:
                r["json"] = json.loads(json.dumps(f()))
            except Exception:
                pass
        if type(value).__name__ == "Figure" and \
                type(value).__module__.startswith("matplotlib"):
            png = figure_png(value)
            if png is not None:
                r["png"] = png
        return r

    def figures():
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            fig = plt.figure(num)
            png = figure_png(fig)
            r = {"type": "result", "is_main_result": False,
                 "text": clip(repr(fig))}
            if png is not None:
                r["png"] = png
            emit(r)
        plt.close("all")

    def error(e, tb):
        if tb is None:
            lines = traceback.format_exception_only(type(e), e)
        else:
            lines = traceback.format_exception(type(e), e, tb)
        emit({"type": "error", "name": type(e).__name__,
              "value": clip(str(e)), "traceback": clip("".join(lines))})

    def run(code, ns):
        try:
            tree = ast.parse(code, "<cell>", "exec")
        except (SyntaxError, ValueError) as e:
            error(e, None)
            return
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        try:
            exec(compile(tree, "<cell>", "exec"), ns)
            value = None
            if last is not None:
                value = eval(compile(last, "<cell>", "eval"), ns)
            if os.getpid() != me:
                os._exit(0)
            figures()
            if value is not None:
                ns["_"] = value
                emit(represent(value, True))
        except BaseException as e:
            if os.getpid() != me:
                os._exit(0)
            # The first frame is this function's, not the cell's.
            error(e, e.__traceback__.tb_next)

    def reseed():
        mod = sys.modules.get("random")
        if mod is not None:
            mod.seed()
        mod = sys.modules.get("numpy.random")
        if mod is not None:
            try:
                mod.seed()
            except Exception:
                pass
        mod = sys.modules.get("tempfile")
        if mod is not None and hasattr(mod, "_name_sequence"):
            mod._name_sequence = None

    if len(sys.argv) > 1 and sys.argv[1]:
        try:
            os.makedirs(sys.argv[1], exist_ok=True)
            os.chdir(sys.argv[1])
        except OSError:
            pass
    sys.argv = [""]
    ns = {"__name__": "__main__", "__builtins__": builtins}
    out, err = sys.stdout, sys.stderr
    count = 0
    while True:
        magic, nonce, code_len, nenv = struct.unpack("<8s8sII", readn(24))
        if magic == b"KEEPSEED":
            # This interpreter is a fork's, restored from the memory of
            # the context it forked: its pseudo-random generators would
            # draw what that one's draw. os.fork's child reseeds random
            # for the same reason; numpy's global generator and
            # tempfile's names are drawn from fresh entropy too.
            reseed()
            continue
        if magic != b"KEEPCELL":
            os._exit(3)
        code = readn(code_len).decode("utf-8", "replace")
        env = {}
        for _ in range(nenv):
            (n,) = struct.unpack("<I", readn(4))
            k, _, v = readn(n).decode("utf-8", "replace").partition("=")
            env[k] = v
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        count += 1
        sys.stdout, sys.stderr = Stream("stdout"), Stream("stderr")
        try:
            run(code, ns)
            flush()
        finally:
            sys.stdout, sys.stderr = out, err
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        emit({"type": "number_of_executions", "execution_count": count})
        end = b'{"type":"end","nonce":"' + nonce.hex().encode() + b'"}\n'
        while end:
            end = end[os.write(ctl, end):]


_keep_context()
