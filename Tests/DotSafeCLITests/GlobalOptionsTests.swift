import DotSafeCLI
import Testing

/// `--keyring PATH` and its default `DOTSAFE_KEYRING`, as commands receive them.
@Suite struct GlobalOptionsTests {
    @Test func noKeyringMeansTheDefault() {
        #expect(runFixture(["probe", "S"]).standardOutput == probeLine(storage: "S"))
    }

    @Test func environmentChoosesTheKeyring() {
        let run = runFixture(["probe", "S"], environment: ["DOTSAFE_KEYRING": "/env/keyring"])
        #expect(run.standardOutput == probeLine(storage: "S", keyring: "/env/keyring"))
    }

    @Test func emptyEnvironmentValueIsIgnored() {
        let run = runFixture(["probe", "S"], environment: ["DOTSAFE_KEYRING": ""])
        #expect(run.standardOutput == probeLine(storage: "S"))
    }

    @Test(arguments: [["--keyring", "/opt/k", "probe", "S"], ["probe", "S", "--keyring=/opt/k"]])
    func optionBeatsEnvironment(arguments: [String]) {
        let run = runFixture(arguments, environment: ["DOTSAFE_KEYRING": "/env/keyring"])
        #expect(run.standardOutput == probeLine(storage: "S", keyring: "/opt/k"))
    }
}
