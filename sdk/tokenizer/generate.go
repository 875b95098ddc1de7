package tokenizer

//go:generate go run ./internal/gen -src ../../../shared/data/deepseek-v3-tokenizer
