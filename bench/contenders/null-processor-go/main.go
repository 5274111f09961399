// The null-hop control's processor in Go (grpc-go, go-control-plane's ext_proc types): the
// same do-nothing exchange as ../null-processor.ts, on a compiled runtime, to show what the
// ext_proc hop costs when the processor's own runtime is not Node. Hold the headers answer
// until the FULL_DUPLEX_STREAMED body ends, name the config's first endpoint (header and
// envoy.lb metadata), give the body back in one message, end OK.
//
//	go build -o null-processor-go . && ./null-processor-go serve --config ROUTER.yaml
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"regexp"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extproc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const destinationHeader = "x-gateway-destination-endpoint"

type processor struct {
	extproc.UnimplementedExternalProcessorServer
	endpoint string
}

func (p *processor) Process(stream extproc.ExternalProcessor_ProcessServer) error {
	var body []byte
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch r := req.Request.(type) {
		case *extproc.ProcessingRequest_RequestHeaders:
			if r.RequestHeaders.EndOfStream {
				return status.Error(codes.FailedPrecondition, "null processor: request without a body")
			}
		case *extproc.ProcessingRequest_RequestBody:
			body = append(body, r.RequestBody.Body...)
			if !r.RequestBody.EndOfStream {
				continue
			}
			if err := stream.Send(p.headersAnswer()); err != nil {
				return err
			}
			return stream.Send(&extproc.ProcessingResponse{
				Response: &extproc.ProcessingResponse_RequestBody{RequestBody: &extproc.BodyResponse{Response: &extproc.CommonResponse{
					BodyMutation: &extproc.BodyMutation{Mutation: &extproc.BodyMutation_StreamedResponse{
						StreamedResponse: &extproc.StreamedBodyResponse{Body: body, EndOfStream: true},
					}},
				}}},
			})
		default:
			return status.Errorf(codes.FailedPrecondition, "null processor: unexpected %T", r)
		}
	}
}

func (p *processor) headersAnswer() *extproc.ProcessingResponse {
	md, _ := structpb.NewStruct(map[string]any{
		"envoy.lb":   map[string]any{destinationHeader: p.endpoint},
		"cacheroute": map[string]any{"destination": p.endpoint},
	})
	return &extproc.ProcessingResponse{
		Response: &extproc.ProcessingResponse_RequestHeaders{RequestHeaders: &extproc.HeadersResponse{Response: &extproc.CommonResponse{
			HeaderMutation: &extproc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
				Header: &corev3.HeaderValue{Key: destinationHeader, RawValue: []byte(p.endpoint)},
				Append: wrapperspb.Bool(false),
			}}},
			ClearRouteCache: true,
		}}},
		DynamicMetadata: md,
	}
}

// readConfig takes server.grpcAddress and endpoints[0].address from a router config (the
// harness writes both on lines of their own).
func readConfig(text []byte) (string, string, error) {
	addr := regexp.MustCompile(`(?m)^\s*grpcAddress:\s*(\S+)\s*$`).FindSubmatch(text)
	endpoint := regexp.MustCompile(`(?m)^\s*-\s*address:\s*(\S+)\s*$`).FindSubmatch(text)
	if addr == nil || endpoint == nil {
		return "", "", fmt.Errorf("null processor: the config needs server.grpcAddress and endpoints[0].address")
	}
	return string(addr[1]), string(endpoint[1]), nil
}

func main() {
	if len(os.Args) != 4 || os.Args[1] != "serve" || os.Args[2] != "--config" {
		fmt.Fprintln(os.Stderr, "usage: null-processor-go serve --config ROUTER.yaml")
		os.Exit(2)
	}
	text, err := os.ReadFile(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addr, endpoint, err := readConfig(text)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	extproc.RegisterExternalProcessorServer(server, &processor{endpoint: endpoint})
	fmt.Printf("{\"msg\":\"listening\",\"address\":%q}\n", lis.Addr().String())
	if err := server.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
