// The engine thread of a server: the chapter 04 step over requests that come and go.
#include "inferlab/serving/live_engine.hpp"

#include <omp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "inferlab/base/timer.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::none:
      return "none";
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
  }
  return "?";
}

RequestStream::RequestStream(int n, int prompt_tokens) : n_(n), prompt_tokens_(prompt_tokens) {
  doorbell_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (doorbell_ < 0) throw Error(fmt::format("eventfd: {}", std::strerror(errno)));
}

RequestStream::~RequestStream() { ::close(doorbell_); }

bool RequestStream::wait(std::vector<TokenEvent>& out, std::chrono::milliseconds timeout,
                         int client_socket) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::unique_lock lock(mu_);
  while (events_.empty() && finished_ < n_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    lock.unlock();
    // A post() between the check and the poll() has rung the doorbell already: not missed.
    pollfd fds[2] = {{doorbell_, POLLIN, 0}, {client_socket, POLLRDHUP, 0}};
    ::poll(fds, client_socket >= 0 ? 2 : 1, static_cast<int>(left.count()));
    eventfd_t rings = 0;
    ::eventfd_read(doorbell_, &rings);  // reset it (non-blocking: nothing to read is fine)
    lock.lock();
    if (fds[1].revents != 0) break;  // the client hung up
  }
  for (TokenEvent& e : events_) out.push_back(std::move(e));
  events_.clear();
  return finished_ == n_;
}

void RequestStream::post(TokenEvent event) {
  {
    std::lock_guard lock(mu_);
    if (event.finish != FinishReason::none) ++finished_;
    events_.push_back(std::move(event));
  }
  ::eventfd_write(doorbell_, 1);
}

// One request on the engine thread: its sequences (choice b is seqs[b]), their filters, and
// which choices are still generating.
struct LiveEngine::Job {
  std::shared_ptr<RequestStream> stream;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::unique_ptr<TokenFilter>> filters;  // empty: unconstrained
  int top_logprobs = -1;
  int live = 0;           // choices not finished
  bool admitted = false;  // counted out of the waiting requests
};

LiveEngine::LiveEngine(const Model& model, const Tokenizer& tokenizer,
                       const LiveEngineConfig& config)
    : model_(model), tokenizer_(tokenizer), config_(config) {
  const ModelConfig& c = model.config();
  context_ = c.seq_len;
  vocab_ = c.vocab_size;
  runner_ = make_runner(model, config.device);
  kv_ = make_kv_manager(config.memory, runner_pools(*runner_, config.kv_type), c, config.kv_type);
  scheduler_ = std::make_unique<Scheduler>(config.scheduler, kv_.get());
  t0_ = now_seconds();
  publish_metrics();
  // OpenMP's thread count is per thread: the engine thread takes the one its creator set
  // (--threads), not OpenMP's default of every core.
  const int threads = omp_get_max_threads();
  thread_ = std::thread([this, threads] {
    omp_set_num_threads(threads);
    run();
  });
}

LiveEngine::~LiveEngine() {
  shutdown();
  if (thread_.joinable()) thread_.join();
}

void LiveEngine::shutdown() {
  {
    std::lock_guard lock(inbox_mu_);
    stopping_ = true;
  }
  inbox_cv_.notify_all();
}

std::shared_ptr<RequestStream> LiveEngine::submit(LiveRequest request) {
  request.sampling.validate();
  const int prompt = static_cast<int>(request.prompt.size());
  if (prompt < 1) throw ParameterError("prompt", "has no token");
  if (prompt > context_)
    throw ParameterError("prompt", fmt::format("{} tokens: the model's context is {}", prompt,
                                               context_));
  for (int id : request.prompt)
    if (id < 0 || id >= vocab_)
      throw ParameterError("prompt",
                           fmt::format("token {} is outside the vocabulary [0, {})", id, vocab_));
  if (request.max_tokens < 1)
    throw ParameterError("max_tokens", fmt::format("{}: must be >= 1", request.max_tokens));
  // Every choice runs in a batch slot of its own: more choices than slots could never start.
  if (request.n < 1 || request.n > config_.scheduler.max_seqs)
    throw ParameterError("n", fmt::format("{}: the choices need a batch slot each; the server "
                                          "has {} batch slots",
                                          request.n, config_.scheduler.max_seqs));
  // The positions one choice holds at its end: it must fit the pool alone, or it never runs.
  const long positions = prompt + std::min(request.max_tokens, context_ - prompt + 1);
  if (kv_->capacity_tokens() > 0 && std::size_t(positions) > kv_->capacity_tokens())
    throw ParameterError("max_tokens",
                         fmt::format("{}: the prompt and max_tokens need {} KV positions; the "
                                     "server's KV memory holds {}",
                                     request.max_tokens, positions, kv_->capacity_tokens()));
  auto stream = std::make_shared<RequestStream>(request.n, prompt);
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) throw QueueFull("the server is shutting down");
    if (waiting_ >= config_.max_queue) {
      ++rejected_;
      throw QueueFull(fmt::format("{} requests are waiting already", waiting_));
    }
    ++waiting_;
    inbox_.emplace_back(stream, std::move(request));
  }
  inbox_cv_.notify_all();
  return stream;
}

void LiveEngine::cancel(const std::shared_ptr<RequestStream>& stream) {
  {
    std::lock_guard lock(inbox_mu_);
    ended_.emplace_back(stream, -1);
  }
  inbox_cv_.notify_all();
}

void LiveEngine::stop_choice(const std::shared_ptr<RequestStream>& stream, int choice) {
  {
    std::lock_guard lock(inbox_mu_);
    ended_.emplace_back(stream, choice);
  }
  inbox_cv_.notify_all();
}

ServerMetrics LiveEngine::metrics() const {
  ServerMetrics m;
  {
    std::lock_guard lock(metrics_mu_);
    m = published_;
  }
  std::lock_guard lock(inbox_mu_);
  m.rejected_queue_full = rejected_;
  return m;
}

void LiveEngine::start_job(std::shared_ptr<RequestStream> stream, LiveRequest request) {
  auto job = std::make_unique<Job>();
  job->stream = std::move(stream);
  job->top_logprobs = request.top_logprobs;
  const int id = next_id_++;
  // The first choice carries the prompt; the others are forked from it once it is in the cache
  // (Sequence::forks), sharing its blocks.
  auto first = std::make_unique<Sequence>();
  first->request.id = id;
  first->request.arrival = now_seconds() - t0_;
  first->request.max_tokens = request.max_tokens;
  first->request.sampling = request.sampling;
  first->request.n = request.n;
  first->request.ignore_eos = request.ignore_eos;
  first->end_tokens = tokenizer_.end_of_generation_ids();  // as make_sequence() sets them
  first->tokens = std::move(request.prompt);
  first->prompt_tokens = static_cast<int>(first->tokens.size());
  // The last generated token is never forwarded: P + max_new_tokens - 1 positions must fit.
  first->max_new_tokens = std::min(request.max_tokens, context_ - first->prompt_tokens + 1);
  first->prefill_target = first->prompt_tokens;
  first->timeline.arrival = first->request.arrival;
  job->seqs.push_back(std::move(first));
  for (int b = 1; b < request.n; ++b) {
    job->seqs.push_back(std::make_unique<Sequence>(make_branch(*job->seqs[0], b)));
    job->seqs[0]->forks.push_back(job->seqs.back().get());
  }
  for (auto& s : job->seqs) {
    s->sampler.emplace(s->request.sampling, vocab_);
    if (request.make_filter) job->filters.push_back(request.make_filter());
  }
  job->live = request.n;
  scheduler_->add(*job->seqs[0]);
  jobs_.emplace(id, std::move(job));
}

void LiveEngine::end_choice(Job& job, int choice, FinishReason reason) {
  Sequence& s = *job.seqs[static_cast<std::size_t>(choice)];
  if (s.finished()) return;
  scheduler_->cancel(s);  // leaves the batch, frees its blocks now
  if (reason == FinishReason::cancelled) {
    ++stats_.finished_cancelled;
  } else {
    ++stats_.finished_stop;
  }
  --job.live;
  job.stream->post({choice, -1, 0.0f, {}, reason});
}

void LiveEngine::take_inbox(
    std::vector<std::pair<std::shared_ptr<RequestStream>, LiveRequest>>& added,
    std::vector<std::pair<std::shared_ptr<RequestStream>, int>>& ended) {
  std::unique_lock lock(inbox_mu_);
  inbox_cv_.wait(lock, [&] {
    return stopping_ || !inbox_.empty() || !ended_.empty() || scheduler_->has_work();
  });
  added.swap(inbox_);
  ended.swap(ended_);
}

void LiveEngine::run() {
  std::vector<std::pair<std::shared_ptr<RequestStream>, LiveRequest>> added;
  std::vector<std::pair<std::shared_ptr<RequestStream>, int>> ended;
  for (;;) {
    added.clear();
    ended.clear();
    take_inbox(added, ended);
    for (auto& [stream, request] : added) start_job(std::move(stream), std::move(request));
    bool stopping = false;
    {
      std::lock_guard lock(inbox_mu_);
      stopping = stopping_;
    }
    for (const auto& entry : ended) {
      // Named variables, not a structured binding: a lambda may not capture one before C++20's
      // P1091 (clang 14 refuses it).
      const auto& stream = entry.first;
      const int choice = entry.second;
      const auto it = std::find_if(jobs_.begin(), jobs_.end(),
                                   [&](const auto& j) { return j.second->stream == stream; });
      if (it == jobs_.end()) continue;  // already finished
      Job& job = *it->second;
      for (int c = 0; c < static_cast<int>(job.seqs.size()); ++c)
        if (choice < 0 || c == choice)
          end_choice(job, c, choice < 0 ? FinishReason::cancelled : FinishReason::stop);
    }
    if (stopping) {
      for (auto& [id, job] : jobs_)
        for (int c = 0; c < static_cast<int>(job->seqs.size()); ++c)
          end_choice(*job, c, FinishReason::cancelled);
    }
    // Requests with no live choice left are done; the ones never admitted leave the queue count.
    int left_queue = 0;
    std::erase_if(jobs_, [&](const auto& j) {
      if (j.second->live > 0) return false;
      if (!j.second->admitted) ++left_queue;
      return true;
    });
    if (left_queue > 0) {
      std::lock_guard lock(inbox_mu_);
      waiting_ -= left_queue;
    }
    if (stopping) {
      publish_metrics();
      return;
    }
    if (scheduler_->has_work()) run_step();
    publish_metrics();
  }
}

void LiveEngine::run_step() {
  const StepPlan plan = scheduler_->schedule();
  if (plan.empty()) {
    // Nothing admissible yet (memory): wait for a cancellation or a new request briefly.
    std::unique_lock lock(inbox_mu_);
    inbox_cv_.wait_for(lock, std::chrono::milliseconds(5));
    return;
  }
  const double start = now_seconds() - t0_;
  int newly_admitted = 0;
  for (const ScheduledChunk& c : plan.chunks) {
    Sequence& s = *c.seq;
    if (s.admitted_at >= 0) continue;
    s.admitted_at = start;
    stats_.queue_time.observe(start - s.timeline.arrival);
    stats_.prompt_tokens += std::uint64_t(s.prompt_tokens);
    stats_.prefix_cache_queries += std::uint64_t(s.prompt_tokens);
    stats_.prefix_cache_hits += std::uint64_t(s.cached_tokens);
    Job& job = *jobs_.at(s.request.id);
    if (!job.admitted) {
      job.admitted = true;
      ++newly_admitted;
    }
  }
  if (newly_admitted > 0) {
    std::lock_guard lock(inbox_mu_);
    waiting_ -= newly_admitted;
  }
  std::vector<TokenEvent> events;  // one per sampling chunk, in plan order
  std::vector<Sequence*> dry;      // sequences whose constraint allows no token
  sample(plan, events, dry);
  scheduler_->postprocess(plan);
  ++stats_.steps;
  const double end = now_seconds() - t0_;
  std::size_t e = 0;
  for (const ScheduledChunk& c : plan.chunks) {
    if (!c.samples) continue;
    Sequence& s = *c.seq;
    TokenEvent& ev = events[e++];
    if (ev.token < 0) continue;  // dry: ended below
    Job& job = *jobs_.at(s.request.id);
    std::vector<double>& times = s.timeline.token_times;
    times.push_back(end);
    ++stats_.generation_tokens;
    if (times.size() == 1) {
      stats_.ttft.observe(end - s.timeline.arrival);
    } else {
      stats_.inter_token.observe(end - times[times.size() - 2]);
    }
    if (s.finished()) {
      ev.finish = s.stop_reason == StopReason::eos ? FinishReason::stop : FinishReason::length;
      ++(ev.finish == FinishReason::stop ? stats_.finished_stop : stats_.finished_length);
      stats_.e2e.observe(end - s.timeline.arrival);
      --job.live;
    }
    job.stream->post(std::move(ev));
  }
  for (Sequence* s : dry) end_choice(*jobs_.at(s->request.id), s->branch, FinishReason::stop);
}

void LiveEngine::sample(const StepPlan& plan, std::vector<TokenEvent>& events,
                        std::vector<Sequence*>& dry) {
  std::vector<BatchEntry> entries;
  bool argmax_only = true;  // every sampling chunk takes the plain argmax, no filter, no logprobs
  for (const ScheduledChunk& c : plan.chunks) {
    Sequence& s = *c.seq;
    entries.push_back({std::span<const int>(s.tokens.data() + c.start, std::size_t(c.count)),
                       c.start, s.kv.get()});
    if (!c.samples) continue;
    const Job& job = *jobs_.at(s.request.id);
    if (!s.request.sampling.argmax_only() || !job.filters.empty() || job.top_logprobs >= 0)
      argmax_only = false;
  }
  if (argmax_only) {
    // The runner takes the argmax where the logits are: on a GPU only the ids come back.
    std::vector<int> chosen;
    runner_->step_greedy(entries, chosen);
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
      if (!plan.chunks[i].samples) continue;
      plan.chunks[i].seq->tokens.push_back(chosen[i]);
      events.push_back({plan.chunks[i].seq->branch, chosen[i], 0.0f, {}, FinishReason::none});
    }
    return;
  }
  std::vector<float> logits, row;
  runner_->step(entries, LogitsMode::last, logits);
  for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& c = plan.chunks[i];
    if (!c.samples) continue;
    Sequence& s = *c.seq;
    Job& job = *jobs_.at(s.request.id);
    const std::span<const float> raw(logits.data() + i * std::size_t(vocab_),
                                     std::size_t(vocab_));
    row.assign(raw.begin(), raw.end());
    TokenFilter* filter =
        job.filters.empty() ? nullptr : job.filters[std::size_t(s.branch)].get();
    if (filter && !filter->mask(row)) {
      dry.push_back(&s);
      events.push_back({s.branch, -1, 0.0f, {}, FinishReason::none});
      continue;
    }
    // OpenAI's penalties count the tokens generated so far, not the prompt's.
    const std::span<const int> generated(s.tokens.data() + s.prompt_tokens,
                                         s.tokens.size() - std::size_t(s.prompt_tokens));
    const int token = s.sampler->sample(row, generated);
    s.tokens.push_back(token);
    if (filter) filter->accept(token);
    TokenEvent ev{s.branch, token, 0.0f, {}, FinishReason::none};
    if (job.top_logprobs >= 0) {
      // Log-probabilities of the model's own distribution (the raw logits, temperature 1).
      const float top = *std::max_element(raw.begin(), raw.end());
      double z = 0.0;
      for (float x : raw) z += std::exp(double(x - top));
      const float log_z = top + float(std::log(z));
      ev.logprob = raw[std::size_t(token)] - log_z;
      std::vector<int> order(static_cast<std::size_t>(vocab_));
      for (int t = 0; t < vocab_; ++t) order[std::size_t(t)] = t;
      const std::size_t k = std::min<std::size_t>(std::size_t(job.top_logprobs), order.size());
      std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                        [&](int a, int b) {
                          return raw[std::size_t(a)] > raw[std::size_t(b)] ||
                                 (raw[std::size_t(a)] == raw[std::size_t(b)] && a < b);
                        });
      for (std::size_t j = 0; j < k; ++j)
        ev.top.emplace_back(order[j], raw[std::size_t(order[j])] - log_z);
    }
    events.push_back(std::move(ev));
  }
}

void LiveEngine::publish_metrics() {
  stats_.requests_running = static_cast<int>(scheduler_->running().size());
  stats_.requests_waiting =
      static_cast<int>(scheduler_->waiting().size() + scheduler_->swapped().size());
  stats_.kv_blocks_total =
      long(kv_->capacity_tokens() / std::size_t(std::max(kv_->block_size(), 1)));
  // Blocks in the tables of live sequences, a shared one once (the cache's own are apart).
  std::vector<int> held;
  for (const Sequence* s : scheduler_->running())
    if (s->kv) held.insert(held.end(), s->kv->blocks().begin(), s->kv->blocks().end());
  std::sort(held.begin(), held.end());
  stats_.kv_blocks_used = long(std::unique(held.begin(), held.end()) - held.begin());
  stats_.kv_blocks_cached = kv_->prefix_cache() ? kv_->prefix_cache()->cached_blocks() : 0;
  std::lock_guard lock(metrics_mu_);
  published_ = stats_;
}

}  // namespace inferlab
