"""A wheel made by hand (zipfile, no pip): a tiny package of the tests' own, for offline
installs through --wheelhouse."""
import base64
import hashlib
import os
import zipfile


def _digest(data):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()


def make_wheel(directory, name='cbtestlib', version='1.0', value=42, extra=None):
    """Write NAME-VERSION-py3-none-any.whl into directory; returns its path. Importing NAME
    gives a module whose VALUE is `value`. `extra`: more files {path in the wheel: bytes}
    (a top-level NAME.pth runs at every start of the interpreter that has it)."""
    os.makedirs(directory, exist_ok=True)
    info = '%s-%s.dist-info' % (name, version)
    files = {
        '%s/__init__.py' % name: ('"""cellbox test package."""\nVALUE = %d\n' % value).encode(),
        '%s/METADATA' % info: ('Metadata-Version: 2.1\nName: %s\nVersion: %s\n'
                               'Summary: cellbox test package\n' % (name, version)).encode(),
        '%s/WHEEL' % info: b'Wheel-Version: 1.0\nGenerator: cellbox-tests\n'
                           b'Root-Is-Purelib: true\nTag: py3-none-any\n',
    }
    files.update(extra or {})
    record = ''.join('%s,%s,%d\n' % (p, _digest(d), len(d)) for p, d in files.items())
    record += '%s/RECORD,,\n' % info
    path = os.path.join(directory, '%s-%s-py3-none-any.whl' % (name, version))
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            z.writestr(p, d)
        z.writestr('%s/RECORD' % info, record)
    return path
