// The malformed-configuration corpus (tests/corpus/config/): every case is refused with
// exactly its positioned errors and exit 2 by `pkitd --check`, by pkitd itself (which
// then creates no socket) and by `pkitctl check`; never a crash.

#include "tests/corpus/corpus.hpp"
#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

void check_refused(const pkit::corpus::Case& c, const CommandResult& result,
                   const std::string& who) {
    INFO(who << " on " << c.name << ", output:\n" << result.all());
    CHECK(result.exit_code == 2);  // 128+N or anything else would be a crash or a hang
    const std::string why =
        pkit::corpus::mismatch(c, c.dir.string(), pkit::corpus::error_lines(result.all()));
    CHECK_MESSAGE(why.empty(), why);
}

}  // namespace

TEST_CASE("every malformed configuration of the corpus is refused with its positioned errors") {
    const auto cases = pkit::corpus::load_cases(PKIT_CONFIG_CORPUS);
    REQUIRE(cases.size() >= 30);
    TempDir scratch;
    for (const auto& c : cases) {
        check_refused(c, run_pkitd({"--check", "--config", c.dir.string()}, 10s), "pkitd --check");
        const std::string socket = scratch.file(c.name + ".sock");
        check_refused(c, run_pkitd({"--config", c.dir.string(), "--socket", socket}, 10s), "pkitd");
        CHECK_MESSAGE(!fs::exists(socket), c.name << ": pkitd created its socket");
        check_refused(c, run_ctl({"check", c.dir.string()}, 10s), "pkitctl check");
    }
}
