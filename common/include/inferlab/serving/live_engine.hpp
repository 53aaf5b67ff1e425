#pragma once
/// @file live_engine.hpp
/// @brief The engine behind a server: requests arrive at any time from other threads, one
/// engine thread runs the chapter 04 step (schedule, forward, sample, postprocess) over every
/// live request, with the paged KV memory of chapter 05 and the prefix cache of chapter 06,
/// and hands each generated token back to the request's thread.
///
/// Threads meet at two places, each guarded by a mutex:
///  - the inbox (LiveEngine, with a condition variable): submit() adds a request, cancel() and
///    stop_choice() ask for a request or one of its choices to end; the engine thread takes
///    them between two steps, so a cancelled sequence frees its KV blocks before the next step
///    is planned;
///  - the outbox of each request (RequestStream, with an eventfd): the engine thread posts one
///    TokenEvent per generated token, the request's thread waits for them and, in the same
///    poll(), for its client to hang up.
/// Everything else (scheduler, sequences, KV memory, the model) belongs to the engine thread.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/server_metrics.hpp"

namespace inferlab {

/// @brief Why a choice ended.
enum class FinishReason {
  none,       ///< still generating
  stop,       ///< end of text, a stop string, or nothing more the constraint allows
  length,     ///< max_tokens, or the context is full
  cancelled,  ///< the client went away, or the server is shutting down
};
/// @brief "stop", "length", "cancelled" (or "none").
const char* finish_reason_name(FinishReason reason);

/// @brief Restricts the next token of one sequence (a constraint of chapter 08). The engine
/// thread calls mask() before each draw and accept() after it.
class TokenFilter {
 public:
  virtual ~TokenFilter() = default;
  /// @brief Sets the logits of disallowed tokens to -inf. @return false if no token is
  /// allowed (the sequence then stops).
  /// @param logits (V) the step's logits for this sequence, modified in place
  virtual bool mask(std::span<float> logits) = 0;
  /// @brief Advances past the drawn token @p token.
  virtual void accept(int token) = 0;
};

/// @brief One generated token of one choice, as the engine thread hands it over.
struct TokenEvent {
  int choice = 0;   ///< which of the request's n choices (0 .. n-1)
  int token = -1;   ///< the token, or -1 for a finish that brings none (cancelled, stopped)
  float logprob = 0.0f;  ///< log-probability of the token under the model (with logprobs)
  /// The most probable tokens with their log-probabilities, most probable first (with logprobs).
  std::vector<std::pair<int, float>> top;
  FinishReason finish = FinishReason::none;  ///< set on the choice's last event
};

/// @brief What one API request asks the engine for.
struct LiveRequest {
  std::vector<int> prompt;  ///< the prompt's ids as the model reads them (BOS included if any)
  int max_tokens = 16;      ///< tokens to generate at most per choice (>= 1)
  int n = 1;                ///< choices, sharing the prompt's KV blocks
  SamplingParams sampling;  ///< choice b draws with seed sampling.seed + 7919 b
  int top_logprobs = -1;    ///< -1: no log-probabilities; k >= 0: the token's and the top k
  bool ignore_eos = false;  ///< generate past the end-of-text tokens (up to max_tokens)
  /// Makes one choice's TokenFilter (called once per choice), or empty: unconstrained.
  std::function<std::unique_ptr<TokenFilter>()> make_filter;
};

/// @brief The events of one request: the engine thread posts, the request's thread waits.
///
/// The doorbell is an eventfd, not a condition variable, so that the waiting thread can wait
/// for the engine and for its client's socket in one poll(): a client that hangs up wakes it as
/// a new token does.
class RequestStream {
 public:
  /// @brief A stream for a request of @p n choices with @p prompt_tokens prompt tokens.
  /// @throws inferlab::Error if no eventfd can be created (the process is out of descriptors).
  RequestStream(int n, int prompt_tokens);
  ~RequestStream();  ///< closes the eventfd
  RequestStream(const RequestStream&) = delete;             ///< owns a descriptor
  RequestStream& operator=(const RequestStream&) = delete;  ///< owns a descriptor
  /// @brief Waits up to @p timeout for events and moves every one posted into @p out (appended).
  /// @param out where the events are appended
  /// @param timeout the longest wait
  /// @param client_socket a connected socket whose peer's hang-up ends the wait early (the
  ///        caller then asks the socket), or -1
  /// @return true when every choice has finished and all its events were taken.
  bool wait(std::vector<TokenEvent>& out, std::chrono::milliseconds timeout,
            int client_socket = -1);
  /// @brief Posts @p event (engine thread).
  void post(TokenEvent event);
  int choices() const { return n_; }                   ///< n
  int prompt_tokens() const { return prompt_tokens_; }  ///< the prompt's length in tokens

 private:
  std::mutex mu_;
  std::deque<TokenEvent> events_;
  int doorbell_ = -1;  // eventfd: readable after a post()
  int n_;
  int prompt_tokens_;
  int finished_ = 0;  // choices whose last event was posted
};

/// @brief Thrown by LiveEngine::submit() when the waiting queue is full.
class QueueFull : public Error {
 public:
  /// @brief @p message says why: how many requests wait, or that the server is stopping.
  explicit QueueFull(const std::string& message) : Error(message) {}
};

/// @brief How the live engine runs.
struct LiveEngineConfig {
  SchedulerConfig scheduler;    ///< batch slots and tokens per step (continuous batching)
  MemoryConfig memory;          ///< paged KV memory and prefix cache (chapters 05-06)
  DType kv_type = DType::f32;   ///< KV storage
  Device device = Device::cpu;  ///< where the forward pass runs
  int max_queue = 256;          ///< requests waiting for admission at most; more get QueueFull
};

/// @brief The engine thread and its inbox.
class LiveEngine {
 public:
  /// @brief Builds the runner and the KV memory and starts the engine thread. @p model and
  /// @p tokenizer must outlive the engine.
  /// @throws inferlab::Error for a bad memory or scheduler configuration.
  LiveEngine(const Model& model, const Tokenizer& tokenizer, const LiveEngineConfig& config);
  /// @brief shutdown(), then joins the thread.
  ~LiveEngine();
  LiveEngine(const LiveEngine&) = delete;             ///< owns a thread
  LiveEngine& operator=(const LiveEngine&) = delete;  ///< owns a thread

  /// @brief Queues @p request; its events arrive on the returned stream.
  /// @throws QueueFull when max_queue requests are waiting already; a ParameterError naming
  /// prompt, max_tokens or n for a request that can never run (empty prompt, prompt longer than
  /// the context, more KV than the whole pool, more choices than batch slots); inferlab::Error
  /// for a bad sampling parameter.
  std::shared_ptr<RequestStream> submit(LiveRequest request);
  /// @brief Ends every choice of @p stream's request (client gone): its sequences leave the
  /// batch and free their KV blocks before the next step. Each gets a cancelled finish event.
  void cancel(const std::shared_ptr<RequestStream>& stream);
  /// @brief Ends choice @p choice of @p stream's request (a stop string was found); it gets a
  /// finish event with FinishReason::stop and no token.
  void stop_choice(const std::shared_ptr<RequestStream>& stream, int choice);
  /// @brief Cancels every request, lets the engine thread finish its step, and stops it.
  void shutdown();

  /// @brief The numbers of the last step (safe from any thread).
  ServerMetrics metrics() const;
  /// @brief The model's context S: prompt + generated tokens fit in it.
  int context() const { return context_; }

 private:
  struct Job;
  void run();
  void take_inbox(std::vector<std::pair<std::shared_ptr<RequestStream>, LiveRequest>>& added,
                  std::vector<std::pair<std::shared_ptr<RequestStream>, int>>& ended);
  void start_job(std::shared_ptr<RequestStream> stream, LiveRequest request);
  void end_choice(Job& job, int choice, FinishReason reason);
  void run_step();
  void sample(const StepPlan& plan, std::vector<TokenEvent>& events, std::vector<Sequence*>& dry);
  void publish_metrics();

  const Model& model_;
  const Tokenizer& tokenizer_;
  LiveEngineConfig config_;
  int context_ = 0;
  int vocab_ = 0;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KVManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::map<int, std::unique_ptr<Job>> jobs_;  // by Request::id (engine thread only)
  int next_id_ = 0;
  double t0_ = 0.0;
  ServerMetrics stats_;  // the engine thread's running numbers

  mutable std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<std::pair<std::shared_ptr<RequestStream>, LiveRequest>> inbox_;
  std::vector<std::pair<std::shared_ptr<RequestStream>, int>> ended_;  // choice -1: all
  int waiting_ = 0;  // requests submitted and not yet admitted (guarded by inbox_mu_)
  bool stopping_ = false;
  std::uint64_t rejected_ = 0;  // guarded by inbox_mu_

  mutable std::mutex metrics_mu_;
  ServerMetrics published_;

  std::thread thread_;
};

}  // namespace inferlab
