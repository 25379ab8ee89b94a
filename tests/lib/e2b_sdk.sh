# Sourced by the tests that drive keepd through E2B's own SDK (bash):
# e2b_sdk_install puts npm's e2b and @e2b/code-interpreter, as
# tests/e2b/package.json pins them, into $B/e2b-sdk once, and sets sdk
# (tests/lib/npm_fixture.sh).
source tests/lib/npm_fixture.sh
e2b_sdk_install() {
	sdk=$(realpath -m "$B/e2b-sdk")
	npm_fixture tests/e2b/package.json "$sdk"
}
