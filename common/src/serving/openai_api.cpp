// The OpenAI API's requests and responses as JSON.
#include "inferlab/serving/openai_api.hpp"

#include <cmath>

#include <fmt/format.h>

namespace inferlab {

ApiError::ApiError(int status, const std::string& message, std::string param, std::string type,
                   std::string code)
    : Error(message),
      status_(status),
      param_(std::move(param)),
      type_(std::move(type)),
      code_(std::move(code)) {}

nlohmann::json error_json(const ApiError& error) {
  nlohmann::json e = {{"message", error.what()}, {"type", error.type()}};
  e["param"] = error.param().empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param());
  e["code"] = error.code().empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code());
  return {{"error", e}};
}

namespace {

using Json = nlohmann::json;

[[noreturn]] void invalid(const std::string& param, const std::string& message) {
  throw ApiError(400, fmt::format("{}: {}", param, message), param, "invalid_request_error",
                 "invalid_value");
}

const char* type_name(const Json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// Field readers: absent or null leaves the default; a wrong type or range is a 400.
bool has(const Json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

double read_number(const Json& body, const char* key, double lo, double hi) {
  const Json& v = body.at(key);
  if (!v.is_number()) invalid(key, fmt::format("expected a number, got {}", type_name(v)));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    invalid(key, fmt::format("{} is outside [{}, {}]", x, lo, hi));
  return x;
}

long long read_integer(const Json& body, const char* key, long long lo, long long hi) {
  const Json& v = body.at(key);
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) ==
                                                             v.get<double>()))
    invalid(key, fmt::format("expected an integer, got {}", type_name(v)));
  const double as_double = v.get<double>();
  if (as_double < double(lo) || as_double > double(hi))
    invalid(key, fmt::format("{} is outside [{}, {}]", v.dump(), lo, hi));
  return v.is_number_unsigned() ? static_cast<long long>(v.get<unsigned long long>())
                                : v.get<long long>();
}

bool read_bool(const Json& body, const char* key) {
  const Json& v = body.at(key);
  if (!v.is_boolean()) invalid(key, fmt::format("expected a boolean, got {}", type_name(v)));
  return v.get<bool>();
}

std::string read_string(const Json& v, const std::string& key) {
  if (!v.is_string()) invalid(key, fmt::format("expected a string, got {}", type_name(v)));
  return v.get<std::string>();
}

// A message's content: a string, or an array of text parts.
std::string message_content(const Json& content, const std::string& param) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    invalid(param, fmt::format("expected a string or an array of parts, got {}",
                               type_name(content)));
  std::string text;
  for (const Json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text"))
      invalid(param, "only text parts ({\"type\": \"text\", \"text\": ...}) are supported");
    text += read_string(part.at("text"), param + ".text");
  }
  return text;
}

void read_messages(const Json& body, CompletionRequest& r) {
  if (!has(body, "messages")) invalid("messages", "required");
  const Json& messages = body.at("messages");
  if (!messages.is_array() || messages.empty())
    invalid("messages", "expected a non-empty array of messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string param = fmt::format("messages[{}]", i);
    if (!m.is_object()) invalid(param, "expected an object");
    if (!has(m, "role")) invalid(param + ".role", "required");
    const std::string role = read_string(m.at("role"), param + ".role");
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      invalid(param + ".role", fmt::format("'{}' is not system, developer, user or assistant",
                                           role));
    r.messages.push_back({role == "developer" ? "system" : role,
                          message_content(m.value("content", Json()), param + ".content")});
  }
}

void read_prompt(const Json& body, CompletionRequest& r) {
  if (!has(body, "prompt")) invalid("prompt", "required");
  const Json& p = body.at("prompt");
  if (p.is_string()) {
    r.prompt = p.get<std::string>();
    return;
  }
  // A list of one string, or a list of token ids.
  if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r.prompt = p[0].get<std::string>();
    return;
  }
  if (p.is_array() && !p.empty()) {
    for (const Json& id : p) {
      if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() > INT32_MAX)
        invalid("prompt", "expected a string, a list of one string or a list of token ids");
      r.prompt_ids.push_back(static_cast<int>(id.get<long long>()));
    }
    return;
  }
  invalid("prompt", "expected a string, a list of one string or a list of token ids");
}

void read_stop(const Json& body, CompletionRequest& r, const ApiLimits& limits) {
  if (!has(body, "stop")) return;
  const Json& s = body.at("stop");
  if (s.is_string()) {
    r.stop.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    if (static_cast<int>(s.size()) > limits.max_stop)
      invalid("stop", fmt::format("at most {} stop strings", limits.max_stop));
    for (const Json& x : s) r.stop.push_back(read_string(x, "stop"));
  } else {
    invalid("stop", fmt::format("expected a string or an array of strings, got {}",
                                type_name(s)));
  }
}

void read_logprobs(const Json& body, CompletionRequest& r, const ApiLimits& limits) {
  if (r.chat) {
    const bool on = has(body, "logprobs") && read_bool(body, "logprobs");
    if (has(body, "top_logprobs")) {
      if (!on) invalid("top_logprobs", "needs \"logprobs\": true");
      r.top_logprobs = int(read_integer(body, "top_logprobs", 0, limits.max_top_logprobs));
    } else if (on) {
      r.top_logprobs = 0;
    }
    return;
  }
  // Completions: logprobs is the number of alternatives (0..5).
  if (has(body, "logprobs")) r.top_logprobs = int(read_integer(body, "logprobs", 0, 5));
}

void read_constraint(const Json& body, CompletionRequest& r) {
  int given = 0;
  if (has(body, "response_format")) {
    const Json& f = body.at("response_format");
    if (!f.is_object() || !f.contains("type"))
      invalid("response_format", "expected an object with a \"type\"");
    const std::string type = read_string(f.at("type"), "response_format.type");
    if (type == "json_object") {
      r.constraint = OutputConstraint::json_object;
      ++given;
    } else if (type == "json_schema") {
      const Json js = f.value("json_schema", Json());
      if (!js.is_object() || !js.contains("schema") || !js.at("schema").is_object())
        invalid("response_format.json_schema", "expected an object with a \"schema\" object");
      r.constraint = OutputConstraint::json_schema;
      r.constraint_text = js.at("schema").dump();
      ++given;
    } else if (type != "text") {
      invalid("response_format.type",
              fmt::format("'{}' is not text, json_object or json_schema", type));
    }
  }
  if (has(body, "grammar")) {
    r.constraint = OutputConstraint::grammar;
    r.constraint_text = read_string(body.at("grammar"), "grammar");
    ++given;
  }
  if (has(body, "regex")) {
    r.constraint = OutputConstraint::regex;
    r.constraint_text = read_string(body.at("regex"), "regex");
    ++given;
  }
  if (given > 1) invalid("response_format", "give one of response_format, grammar and regex");
}

}  // namespace

CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat,
                                           const ApiLimits& limits) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  CompletionRequest r;
  r.chat = chat;
  if (has(body, "model")) r.model = read_string(body.at("model"), "model");
  if (chat) {
    read_messages(body, r);
  } else {
    read_prompt(body, r);
  }
  for (const char* key : {"max_completion_tokens", "max_tokens"})
    if (has(body, key)) r.max_tokens = int(read_integer(body, key, 1, limits.max_tokens));
  if (has(body, "n")) r.n = int(read_integer(body, "n", 1, limits.max_n));
  SamplingParams& s = r.sampling;
  s.temperature = 1.0f;
  if (has(body, "temperature")) s.temperature = float(read_number(body, "temperature", 0, 2));
  if (has(body, "top_p")) {
    s.top_p = float(read_number(body, "top_p", 0, 1));
    if (s.top_p == 0.0f) invalid("top_p", "must be > 0");
  }
  if (has(body, "top_k")) {
    const long long k = read_integer(body, "top_k", -1, INT32_MAX);
    s.top_k = k < 0 ? 0 : int(k);  // -1 disables, as in vLLM
  }
  if (has(body, "min_p")) s.min_p = float(read_number(body, "min_p", 0, 1));
  if (has(body, "presence_penalty"))
    s.presence_penalty = float(read_number(body, "presence_penalty", -2, 2));
  if (has(body, "frequency_penalty"))
    s.frequency_penalty = float(read_number(body, "frequency_penalty", -2, 2));
  if (has(body, "seed")) {
    s.seed = std::uint64_t(read_integer(body, "seed", INT64_MIN, INT64_MAX));
    r.seed_given = true;
  }
  read_stop(body, r, limits);
  if (has(body, "stream")) r.stream = read_bool(body, "stream");
  if (has(body, "ignore_eos")) r.ignore_eos = read_bool(body, "ignore_eos");
  if (has(body, "stream_options")) {
    const Json& o = body.at("stream_options");
    if (!o.is_object()) invalid("stream_options", "expected an object");
    if (!r.stream) invalid("stream_options", "only allowed when \"stream\" is true");
    if (has(o, "include_usage")) r.include_usage = read_bool(o, "include_usage");
  }
  read_logprobs(body, r, limits);
  read_constraint(body, r);
  return r;
}

nlohmann::json usage_json(int prompt_tokens, int completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

namespace {

Json finish_value(FinishReason finish) {
  if (finish == FinishReason::none) return nullptr;
  return finish_reason_name(finish);
}

Json token_bytes(const std::string& token) {
  Json bytes = Json::array();
  for (unsigned char c : token) bytes.push_back(int(c));
  return bytes;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs}]}; completions: parallel arrays.
Json logprobs_json(bool chat, const std::vector<TokenLogprob>& lps) {
  if (chat) {
    Json content = Json::array();
    for (const TokenLogprob& t : lps) {
      Json top = Json::array();
      for (const auto& [tok, lp] : t.top)
        top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", token_bytes(tok)}});
      content.push_back({{"token", t.token},
                         {"logprob", t.logprob},
                         {"bytes", token_bytes(t.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  Json tokens = Json::array(), values = Json::array(), tops = Json::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(t.token);
    values.push_back(t.logprob);
    Json top = Json::object();
    for (const auto& [tok, lp] : t.top) top[tok] = lp;
    tops.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}};
}

Json response_base(const ResponseHeader& h, bool chunk) {
  const char* object = h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                              : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

}  // namespace

nlohmann::json completion_json(const ResponseHeader& header,
                               const std::vector<ChoiceOutput>& choices, int prompt_tokens) {
  Json out = response_base(header, /*chunk=*/false);
  Json list = Json::array();
  int completion_tokens = 0;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    completion_tokens += c.tokens;
    Json choice = {{"index", i}};
    if (header.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = header.logprobs ? logprobs_json(header.chat, c.logprobs) : Json(nullptr);
    choice["finish_reason"] = finish_value(c.finish);
    list.push_back(choice);
  }
  out["choices"] = list;
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

nlohmann::json chunk_json(const ResponseHeader& header, int index, const std::string& role,
                          const std::string& text, const std::vector<TokenLogprob>& logprobs,
                          FinishReason finish, bool with_usage) {
  Json out = response_base(header, /*chunk=*/true);
  Json choice = {{"index", index}};
  if (header.chat) {
    Json delta = Json::object();
    if (!role.empty()) delta["role"] = role;
    if (!text.empty() || !role.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = header.logprobs && !logprobs.empty() ? logprobs_json(header.chat, logprobs)
                                                            : Json(nullptr);
  choice["finish_reason"] = finish_value(finish);
  out["choices"] = Json::array({choice});
  if (with_usage) out["usage"] = nullptr;
  return out;
}

nlohmann::json usage_chunk_json(const ResponseHeader& header, int prompt_tokens,
                                int completion_tokens) {
  Json out = response_base(header, /*chunk=*/true);
  out["choices"] = Json::array();
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::json& payload) {
  return "data: " + dump_json(payload) + "\n\n";
}

}  // namespace inferlab
