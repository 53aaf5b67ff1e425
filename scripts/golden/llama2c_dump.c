// The reference side of scripts/make_golden.sh: llama2.c's own run.c, compiled with TESTING so
// that its main() is left out, driven by a loop that is run.c's generate() step for step and
// also records what generate() only prints: the token ids and each position's logits.
//
//   llama2c_dump greedy MODEL TOKENIZER STEPS PROMPT IDS_FILE
//       prints exactly what `run MODEL -z TOKENIZER -t 0 -n STEPS -i PROMPT` prints (the script
//       checks that), and writes two lines to IDS_FILE: the prompt's ids, then every token
//       forwarded (BOS first) followed by the last one sampled.
//   llama2c_dump logits MODEL TOKENIZER STEPS PROMPT ROWS_FILE
//       the same greedy run, writing one line per forwarded position to ROWS_FILE:
//       `pos token logit_0 ... logit_{V-1}` (the logits after forwarding `token` at `pos`).
//   llama2c_dump encode TOKENIZER VOCAB_SIZE TEXT
//       prints encode()'s ids for TEXT, BOS prepended, no EOS, on one line.
//
// Build: cc -O3 -I <llama2.c checkout> -o llama2c_dump llama2c_dump.c -lm
#define TESTING
#include "run.c"

static void write_ids(FILE* f, const int* ids, int n) {
  for (int i = 0; i < n; i++) fprintf(f, i ? " %d" : "%d", ids[i]);
  fprintf(f, "\n");
}

static FILE* open_or_die(const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "llama2c_dump: cannot write %s\n", path);
    exit(EXIT_FAILURE);
  }
  return f;
}

// run.c's generate() at temperature 0, plus the records. `rows` may be NULL.
static void greedy(char* model, char* tokenizer_path, int steps, char* prompt, FILE* ids,
                   FILE* rows) {
  Transformer transformer;
  build_transformer(&transformer, model);
  const int vocab = transformer.config.vocab_size;
  // run.c's main(): 0 or more than the context means the whole context.
  if (steps <= 0 || steps > transformer.config.seq_len) steps = transformer.config.seq_len;
  Tokenizer tokenizer;
  build_tokenizer(&tokenizer, tokenizer_path, vocab);
  Sampler sampler;
  build_sampler(&sampler, vocab, 0.0f, 0.9f, 1);  // temperature 0: sample() is the argmax

  int* prompt_tokens = malloc((strlen(prompt) + 3) * sizeof(int));
  int num_prompt_tokens = 0;
  encode(&tokenizer, prompt, 1, 0, prompt_tokens, &num_prompt_tokens);
  int* tokens = malloc((steps + 1) * sizeof(int));
  int n_tokens = 0;
  int token = prompt_tokens[0];
  tokens[n_tokens++] = token;
  for (int pos = 0; pos < steps; pos++) {
    float* logits = forward(&transformer, token, pos);
    if (rows) {
      fprintf(rows, "%d %d", pos, token);
      for (int i = 0; i < vocab; i++) fprintf(rows, " %.6e", logits[i]);
      fprintf(rows, "\n");
    }
    const int next = pos < num_prompt_tokens - 1 ? prompt_tokens[pos + 1] : sample(&sampler, logits);
    tokens[n_tokens++] = next;
    if (next == 1) break;  // BOS ends the sequence, unprinted
    safe_printf(decode(&tokenizer, token, next));
    token = next;
  }
  printf("\n");
  if (ids) {
    write_ids(ids, prompt_tokens, num_prompt_tokens);
    write_ids(ids, tokens, n_tokens);
  }
  free(tokens);
  free(prompt_tokens);
  free_sampler(&sampler);
  free_tokenizer(&tokenizer);
  free_transformer(&transformer);
}

int main(int argc, char** argv) {
  if (argc == 7 && (strcmp(argv[1], "greedy") == 0 || strcmp(argv[1], "logits") == 0)) {
    FILE* out = open_or_die(argv[6]);
    const int is_greedy = strcmp(argv[1], "greedy") == 0;
    greedy(argv[2], argv[3], atoi(argv[4]), argv[5], is_greedy ? out : NULL,
           is_greedy ? NULL : out);
    fclose(out);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "encode") == 0) {
    Tokenizer tokenizer;
    build_tokenizer(&tokenizer, argv[2], atoi(argv[3]));
    int* ids = malloc((strlen(argv[4]) + 3) * sizeof(int));
    int n = 0;
    encode(&tokenizer, argv[4], 1, 0, ids, &n);
    write_ids(stdout, ids, n);
    free(ids);
    free_tokenizer(&tokenizer);
    return 0;
  }
  fprintf(stderr,
          "usage: llama2c_dump greedy|logits MODEL TOKENIZER STEPS PROMPT OUT_FILE\n"
          "       llama2c_dump encode TOKENIZER VOCAB_SIZE TEXT\n");
  return 2;
}
