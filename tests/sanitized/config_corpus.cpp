// The configuration loader under AddressSanitizer and UBSan: every case of the
// malformed-configuration corpus (tests/corpus/config/) is loaded and must be refused
// with exactly its expected errors, and the bundled examples must load. The loader is
// what pkitd and `pkitd --check` run on a configuration before anything else, so a
// memory error or undefined behaviour on bad input shows here, as a failed ctest.
//
//   pkit_config_corpus_sanitized CORPUS_DIR EXAMPLES_DIR

#include <iostream>
#include <sstream>

#include "config/loader.hpp"
#include "tests/corpus/corpus.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: " << argv[0] << " CORPUS_DIR EXAMPLES_DIR\n";
        return 2;
    }
    const auto options = pkit::config::default_load_options();
    int failed = 0;
    const auto cases = pkit::corpus::load_cases(argv[1]);
    for (const auto& c : cases) {
        auto tree = pkit::config::load_tree(c.dir, options);
        std::ostringstream output;
        if (tree) {
            output << "(loaded without error)\n";
        } else {
            for (const auto& diagnostic : tree.error()) {
                output << diagnostic.to_string() << '\n';
            }
        }
        const std::string why =
            pkit::corpus::mismatch(c, c.dir.string(), pkit::corpus::error_lines(output.str()));
        if (!why.empty()) {
            ++failed;
            std::cout << "FAIL " << c.name << ":\n" << why << "output:\n" << output.str();
        }
    }
    auto examples = pkit::config::load_tree(argv[2], options);
    if (!examples) {
        ++failed;
        std::cout << "FAIL the examples do not load:\n";
        for (const auto& diagnostic : examples.error()) {
            std::cout << diagnostic.to_string() << '\n';
        }
    }
    std::cout << cases.size() << " corpus cases and the examples, " << failed << " failed\n";
    return failed == 0 && cases.size() >= 30 ? 0 : 1;
}
