// gRPC server reflection (grpc.reflection.v1 and v1alpha) for a service host: the services it
// serves and their proto files, so that grpcurl and other tools can list and call them without
// the .proto files. Served to any caller holding a certificate of the CA (callers.ts).
import { toBinary, type DescEnum, type DescFile, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import * as v1 from "@icv/contracts/gen/grpc/reflection/v1/reflection_pb.ts";
import * as v1alpha from "@icv/contracts/gen/grpc/reflection/v1alpha/reflection_pb.ts";

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

/** The answers of one host: its services, their files (with every import) and the symbols in them. */
function catalogue(services: readonly DescService[]) {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const addMessages = (file: DescFile, messages: readonly (DescMessage | DescEnum)[]) => {
    for (const m of messages) {
      symbols.set(m.typeName, file);
      if (m.kind === "message") addMessages(file, [...m.nestedMessages, ...m.nestedEnums]);
    }
  };
  const addFile = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    addMessages(file, [...file.messages, ...file.enums]);
    for (const s of file.services) {
      symbols.set(s.typeName, file);
      for (const m of s.methods) symbols.set(`${s.typeName}.${m.name}`, file);
    }
    for (const d of file.dependencies) addFile(d);
  };
  for (const s of services) addFile(s.file);
  /** A file and every file it imports, each once, serialized. */
  const withImports = (file: DescFile): Uint8Array[] => {
    const out = new Map<string, Uint8Array>();
    const walk = (f: DescFile) => {
      if (out.has(f.proto.name)) return;
      out.set(f.proto.name, toBinary(FileDescriptorProtoSchema, f.proto));
      for (const d of f.dependencies) walk(d);
    };
    walk(file);
    return [...out.values()];
  };
  return { names: services.map((s) => s.typeName).sort(), files, symbols, withImports };
}

/** Adds both versions of the reflection service to `router`, describing `services` (and themselves). */
export function reflectionRoutes(router: ConnectRouter, services: readonly DescService[]): void {
  const all = [...services, v1.ServerReflection, v1alpha.ServerReflection];
  const c = catalogue(all);
  const answer = (req: Request) => {
    const r = req.messageRequest;
    const notFound = (what: string) => ({ case: "errorResponse" as const, value: { errorCode: 5, errorMessage: `${what} not found` } });
    const files = (f: DescFile | undefined, what: string) =>
      f ? { case: "fileDescriptorResponse" as const, value: { fileDescriptorProto: c.withImports(f) } } : notFound(what);
    const response = (() => {
      switch (r.case) {
        case "listServices":
          return { case: "listServicesResponse" as const, value: { service: c.names.map((name) => ({ name })) } };
        case "fileByFilename":
          return files(c.files.get(r.value), `file ${r.value}`);
        case "fileContainingSymbol":
          return files(c.symbols.get(r.value), `symbol ${r.value}`);
        case "allExtensionNumbersOfType":
          return c.symbols.has(r.value)
            ? { case: "allExtensionNumbersResponse" as const, value: { baseTypeName: r.value, extensionNumber: [] } }
            : notFound(`type ${r.value}`);
        default:
          return notFound("extension");
      }
    })();
    return { validHost: req.host, messageResponse: response };
  };
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield { ...answer(req), originalRequest: req };
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield { ...answer(req), originalRequest: req };
    },
  });
}
