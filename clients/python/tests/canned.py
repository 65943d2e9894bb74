"""Responses as the OpenAI and Anthropic APIs send them (their API
references' shapes), as dicts; `as_object` turns one into what an SDK
returns (attributes, as pydantic models have them)."""

from __future__ import annotations

from typing import Any, Dict, List


class SdkObject:
    """Attributes for keys, like an SDK's pydantic model."""

    def __init__(self, fields: Dict[str, Any]) -> None:
        for key, value in fields.items():
            setattr(self, key, as_object(value))

    def __iter__(self) -> Any:  # pydantic models iterate over their fields
        return iter(vars(self).items())


def as_object(value: Any) -> Any:
    if isinstance(value, dict):
        return SdkObject(value)
    if isinstance(value, list):
        return [as_object(v) for v in value]
    return value


CHAT = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion", "created": 1741569952,
    "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {
        "role": "assistant", "content": "Hello! How can I assist you today?",
        "refusal": None, "annotations": []},
        "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 19, "completion_tokens": 10,
              "total_tokens": 29,
              "prompt_tokens_details": {"cached_tokens": 0,
                                        "audio_tokens": 0},
              "completion_tokens_details": {
                  "reasoning_tokens": 0, "audio_tokens": 0,
                  "accepted_prediction_tokens": 0,
                  "rejected_prediction_tokens": 0}},
    "service_tier": "default",
}

def _chunk(content: Any, finish: Any = None) -> Dict[str, Any]:
    return {"id": "chatcmpl-123", "object": "chat.completion.chunk",
            "created": 1694268190, "model": "gpt-4o-mini",
            "system_fingerprint": "fp_44709d6fcb",
            "choices": [{"index": 0, "delta": content, "logprobs": None,
                         "finish_reason": finish}],
            "usage": None}


CHAT_STREAM: List[Dict[str, Any]] = [
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Hello"}),
    _chunk({"content": "!"}),
    _chunk({}, "stop"),
    {"id": "chatcmpl-123", "object": "chat.completion.chunk",
     "created": 1694268190, "model": "gpt-4o-mini", "choices": [],
     "usage": {"prompt_tokens": 1203, "completion_tokens": 77,
               "total_tokens": 1280}},
]

RESPONSE = {
    "id": "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41",
    "object": "response", "created_at": 1741476777, "status": "completed",
    "model": "gpt-4o-2024-08-06",
    "output": [{"type": "message", "id": "msg_67ccd3acc8d48190a77525dc6de",
                "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "In a peaceful "
                             "grove beneath a silver moon...",
                             "annotations": []}]}],
    "usage": {"input_tokens": 328, "input_tokens_details": {
        "cached_tokens": 0}, "output_tokens": 52,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 380},
}

RESPONSE_STREAM: List[Dict[str, Any]] = [
    {"type": "response.created", "sequence_number": 0,
     "response": dict(RESPONSE, status="in_progress", output=[],
                      usage=None)},
    {"type": "response.output_text.delta", "sequence_number": 4,
     "item_id": "msg_1", "output_index": 0, "content_index": 0,
     "delta": "In a peaceful"},
    {"type": "response.output_text.done", "sequence_number": 9,
     "item_id": "msg_1", "output_index": 0, "content_index": 0,
     "text": "In a peaceful grove"},
    {"type": "response.completed", "sequence_number": 12,
     "response": dict(RESPONSE, usage={
         "input_tokens": 511, "input_tokens_details": {"cached_tokens": 256},
         "output_tokens": 144,
         "output_tokens_details": {"reasoning_tokens": 64},
         "total_tokens": 655})},
]

MESSAGE = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message",
    "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Hi! My name is Claude."}],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 2095, "output_tokens": 503,
              "cache_creation_input_tokens": 100,
              "cache_read_input_tokens": 1000,
              "service_tier": "standard"},
}

MESSAGE_STREAM: List[Dict[str, Any]] = [
    {"type": "message_start", "message": {
        "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message",
        "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5-20250929", "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1,
                  "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "text_delta", "text": "Hello"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                         "stop_sequence": None},
     "usage": {"output_tokens": 15}},
    {"type": "message_stop"},
]

# (name, response or stream, input tokens, output tokens)
CASES = [
    ("chat", CHAT, 19, 10),
    ("chat stream", CHAT_STREAM, 1203, 77),
    ("responses", RESPONSE, 328, 52),
    ("responses stream", RESPONSE_STREAM, 511, 144),
    ("messages", MESSAGE, 2095 + 100 + 1000, 503),
    ("messages stream", MESSAGE_STREAM, 25, 15),
]
