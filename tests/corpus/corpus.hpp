#pragma once
// The malformed-configuration corpus (tests/corpus/config/, see its README): reading
// the cases and matching reported errors against each case's `expect` file. Shared by
// the integration test and the sanitized loader driver; the standard library only.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pkit::corpus {

struct Case {
    std::string name;
    std::filesystem::path dir;
    std::vector<std::string> expected;  // "FILE:LINE:COLUMN: error: MESSAGE" lines
};

// Every case under `root`, in name order.
inline std::vector<Case> load_cases(const std::filesystem::path& root) {
    std::vector<Case> cases;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
        if (!entry.is_directory()) {
            continue;
        }
        Case c{entry.path().filename().string(), entry.path(), {}};
        std::ifstream in(entry.path() / "expect");
        for (std::string line; std::getline(in, line);) {
            if (!line.empty()) {
                c.expected.push_back(line);
            }
        }
        cases.push_back(std::move(c));
    }
    std::sort(cases.begin(), cases.end(),
              [](const Case& a, const Case& b) { return a.name < b.name; });
    return cases;
}

// The lines of `output` that are positioned errors ("...:LINE:COLUMN: error: ...").
inline std::vector<std::string> error_lines(const std::string& output) {
    std::vector<std::string> out;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
        if (line.find(": error: ") != std::string::npos) {
            out.push_back(line);
        }
    }
    return out;
}

// What is wrong with `reported` (error lines) for case `c` run on directory `dir_text`
// as given on the command line; empty when every expected error is there, in order,
// and nothing else.
inline std::string mismatch(const Case& c, const std::string& dir_text,
                            const std::vector<std::string>& reported) {
    if (c.expected.empty()) {
        return "the case has no expect file";
    }
    std::ostringstream why;
    if (reported.size() != c.expected.size()) {
        why << reported.size() << " errors reported, " << c.expected.size() << " expected\n";
    }
    for (std::size_t i = 0; i < std::min(reported.size(), c.expected.size()); ++i) {
        const std::string want = dir_text + "/" + c.expected[i];
        if (reported[i].rfind(want, 0) != 0) {
            why << "error " << i + 1 << ": expected a line starting\n  " << want << "\ngot\n  "
                << reported[i] << '\n';
        }
    }
    return why.str();
}

}  // namespace pkit::corpus
