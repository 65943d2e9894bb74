#include "ctl/top_subjects.h"

#include <sstream>

#include "ctl/format.h"
#include "ctl/table.h"
#include "ctl/top_format.h"

namespace brake::ctl {

using nlohmann::json;

Result<std::vector<SubjectRow>> ParseSubjects(const json& reply) {
  auto rows = reply.find("rows");
  if (rows == reply.end() || !rows->is_array()) {
    return Status::Unavailable("top: reply has no \"rows\"");
  }
  std::vector<SubjectRow> out;
  for (const json& r : *rows) {
    if (!r.is_object() || !r.contains("subject") || !r["subject"].is_string()) {
      return Status::Unavailable("top: a row has no \"subject\"");
    }
    SubjectRow row;
    row.subject = r["subject"].get<std::string>();
    for (auto [key, field] :
         {std::pair{"grants", &row.grants}, std::pair{"denials", &row.denials},
          std::pair{"tokens", &row.tokens}, std::pair{"usd", &row.usd}}) {
      auto v = r.find(key);
      if (v != r.end() && v->is_number()) *field = v->get<double>();
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<RatedSubject> RateSubjects(const std::vector<SubjectRow>* previous,
                                       const std::vector<SubjectRow>& current,
                                       int64_t interval_ms) {
  std::vector<RatedSubject> out;
  for (const SubjectRow& row : current) {
    RatedSubject rated{row, std::nullopt, std::nullopt};
    if (previous != nullptr) {
      for (const SubjectRow& before : *previous) {
        if (before.subject != row.subject) continue;
        rated.grants_per_s = PerSecond(before.grants, row.grants, interval_ms);
        rated.denials_per_s =
            PerSecond(before.denials, row.denials, interval_ms);
        break;
      }
    }
    out.push_back(std::move(rated));
  }
  return out;
}

void RenderSubjects(const std::string& title,
                    const std::vector<RatedSubject>& rows,
                    std::vector<std::string>* lines) {
  if (rows.empty()) return;
  Table table(
      {title, "GRANTS/S", "DENIALS/S", "GRANTS", "DENIALS", "RESERVED_TOKENS",
       "RESERVED_USD"});
  for (const RatedSubject& r : rows) {
    table.AddRow({r.row.subject, FormatRate(r.grants_per_s),
                  FormatRate(r.denials_per_s), FormatCount(r.row.grants),
                  FormatCount(r.row.denials), FormatCount(r.row.tokens),
                  FormatDecimal(r.row.usd)});
  }
  std::ostringstream text;
  table.Render(text);
  AppendLines(text.str(), lines);
  lines->emplace_back();
}

json SubjectsJson(const std::vector<RatedSubject>& rows) {
  json out = json::array();
  for (const RatedSubject& r : rows) {
    out.push_back({{"subject", r.row.subject},
                   {"grants",
                    {{"total", NumberJson(r.row.grants)},
                     {"per_s", NumberJson(r.grants_per_s)}}},
                   {"denials",
                    {{"total", NumberJson(r.row.denials)},
                     {"per_s", NumberJson(r.denials_per_s)}}},
                   {"tokens", NumberJson(r.row.tokens)},
                   {"usd", NumberJson(r.row.usd)}});
  }
  return out;
}

}  // namespace brake::ctl
