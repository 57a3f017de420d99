"""The lean HTTP/1.1 client against raw loopback servers that control every byte."""

import asyncio

import pytest

from fleetsieve.backends.openai.http1 import Pool, parse_endpoint, parse_head
from fleetsieve.errors import InputError

SSE = b"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n"


def chunked(body: bytes, size: int) -> bytes:
    parts = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def head(status: int = 200, **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def raw_server(responses, *, byte_by_byte=False, close_after=None, drop_next=False):
    """Answers each request read on a connection with the next of ``responses`` (bytes);
    closes a connection after ``close_after`` answers (with ``drop_next``: after reading one
    more request, which goes unanswered). Returns (server, port, seen)."""
    seen = {"connections": 0, "requests": 0}
    answers = iter(responses)

    async def handle(reader, writer):
        seen["connections"] += 1
        served = 0
        while True:
            request = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
            if not request:
                break
            length = int(request.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            seen["requests"] += 1
            if close_after is not None and served >= close_after:
                break  # drop_next: this request is read and never answered
            data = next(answers)
            for piece in ([data[i:i + 1] for i in range(len(data))] if byte_by_byte else [data]):
                writer.write(piece)
                await writer.drain()
            served += 1
            if close_after is not None and served >= close_after and not drop_next:
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


async def post(pool, path="/v1/completions"):
    got = bytearray()
    error = await pool.post(path, b"{}", got.extend)
    return error, bytes(got)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_parse_head_and_endpoint():
    h = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream")
    assert (h.status, h.chunked, h.length, h.keep_alive) == (200, True, None, True)
    h = parse_head(b"HTTP/1.0 404 Not Found\r\nContent-Length: 7")
    assert (h.status, h.length, h.keep_alive) == (404, 7, False)
    assert parse_head(b"HTTP/1.1 200 OK\r\nConnection: close").keep_alive is False
    with pytest.raises(ValueError):
        parse_head(b"SPDY/3 200 OK")
    ep = parse_endpoint("https://example.org/api/")
    assert (ep.host, ep.port, ep.tls, ep.base_path, ep.host_header) == ("example.org", 443, True, "/api", "example.org")
    assert parse_endpoint("http://127.0.0.1:8000").host_header == "127.0.0.1:8000"
    with pytest.raises(InputError):
        parse_endpoint("ftp://x")


@pytest.mark.parametrize("byte_by_byte", [False, True])
def test_chunked_and_sized_bodies_arrive_whole_and_connections_are_kept_alive(byte_by_byte):
    async def main():
        answers = [head(transfer_encoding="chunked") + chunked(SSE, 7),
                   head(content_length=str(len(SSE))) + SSE] * 2
        server, port, seen = await raw_server(answers, byte_by_byte=byte_by_byte)
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=5)
        results = [await post(pool) for _ in range(4)]
        pool.close()
        server.close()
        return results, seen, pool.connections_opened
    results, seen, opened = run(main())
    assert results == [(None, SSE)] * 4
    assert seen == {"connections": 1, "requests": 4} and opened == 1


def test_read_until_close_body_and_error_status():
    async def main():
        server, port, _ = await raw_server([head() + SSE], close_after=1)
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=5)
        ok = await post(pool)
        server.close()
        server, port, _ = await raw_server([head(503, content_length="9") + b"overload!"])
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=5)
        failed = await post(pool)
        pool.close()
        server.close()
        return ok, failed
    ok, failed = run(main())
    assert ok == (None, SSE)
    assert failed == ("HTTP 503: overload!", b"")  # an error body never reaches the stream callback


def test_stale_keep_alive_connection_is_retried_on_a_new_one():
    async def main():
        answer = head(content_length=str(len(SSE))) + SSE
        # each connection answers one request, then reads the next and closes without a word:
        # the race where a server drops an idle keep-alive connection as the client reuses it
        server, port, seen = await raw_server([answer, answer], close_after=1, drop_next=True)
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=5)
        first = await post(pool)
        second = await post(pool)
        pool.close()
        server.close()
        return first, second, seen
    first, second, seen = run(main())
    assert first == second == (None, SSE)
    assert seen == {"connections": 2, "requests": 3}


def test_stream_cut_timeout_and_refused_are_reasons_not_exceptions():
    async def main():
        server, port, _ = await raw_server([head(transfer_encoding="chunked") + b"5\r\nda"], close_after=1)
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=5)
        cut = await post(pool)
        server.close()
        server, port, _ = await raw_server([head(content_length="100") + b"only a part"])
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=0.2)
        timed_out = await post(pool)
        pool.close()
        server.close()
        await server.wait_closed()
        refused = await post(Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=1))
        return cut, timed_out, refused
    cut, timed_out, refused = run(main())
    assert cut[0].startswith("stream cut mid-response") and cut[1] == b"da"
    assert timed_out[0] == "timeout after 0.2 s"
    assert refused[0].startswith("connection refused")


def test_connection_cap_queues_requests_and_never_exceeds_it():
    async def main():
        answer = head(content_length=str(len(SSE))) + SSE
        server, port, seen = await raw_server([answer] * 12)
        pool = Pool(parse_endpoint(f"http://127.0.0.1:{port}"), timeout_s=5, max_connections=3)
        results = await asyncio.gather(*(post(pool) for _ in range(12)))
        pool.close()
        server.close()
        return results, seen, pool.connections_opened
    results, seen, opened = run(main())
    assert results == [(None, SSE)] * 12
    assert opened <= 3 and seen["connections"] <= 3 and seen["requests"] == 12
