import XCTest
@testable import PeerLink
@testable import PeerLinkBluetooth

/// Reading bluetoothd's TemporaryTimeout (when a vanished peer is reported lost) for `peerlink doctor`.
final class BlueZMainConfTests: XCTestCase {
    func testDebiansFileLeavesTheDefault() {
        let debian = """
        [General]
        # How long to keep temporary devices around
        # The value is in seconds. Default is 30.
        # 0 = disable timer, i.e. never keep temporary devices
        #TemporaryTimeout = 30

        [Policy]
        #AutoEnable=true
        """
        let conf = BlueZMainConf(text: debian)
        XCTAssertNil(conf.temporaryTimeout)
        XCTAssertEqual(conf.effectiveTemporaryTimeout, 30)
    }

    func testValueUnderGeneralIsRead() {
        XCTAssertEqual(BlueZMainConf(text: "[General]\nJustWorksRepairing = always\n  TemporaryTimeout=8  \n").temporaryTimeout, 8)
        XCTAssertEqual(BlueZMainConf(text: "[ General ]\r\nTemporaryTimeout = 0\r\n").effectiveTemporaryTimeout, 0)
    }

    func testOtherSectionsAndBadValuesAreIgnored() {
        XCTAssertNil(BlueZMainConf(text: "[Policy]\nTemporaryTimeout = 5\n").temporaryTimeout)
        XCTAssertNil(BlueZMainConf(text: "TemporaryTimeout = 5\n").temporaryTimeout, "a key before any section")
        XCTAssertNil(BlueZMainConf(text: "[General]\nTemporaryTimeout = soon\n").temporaryTimeout)
        XCTAssertNil(BlueZMainConf(text: "[General]\nTemporaryTimeout = -4\n").temporaryTimeout)
        XCTAssertNil(BlueZMainConf(text: "[General]\nTemporaryTimeoutX = 4\n[General\nTemporaryTimeout\n").temporaryTimeout)
        XCTAssertEqual(BlueZMainConf(text: "").effectiveTemporaryTimeout, 30)
    }

    func testConfigFileComesFromBluetoothdsArguments() {
        XCTAssertEqual(BlueZMainConf.path(bluetoothdArguments: ["/usr/libexec/bluetooth/bluetoothd"]), "/etc/bluetooth/main.conf")
        XCTAssertEqual(BlueZMainConf.path(bluetoothdArguments: ["bluetoothd", "-n", "-f", "/run/bt-lab/main.conf"]), "/run/bt-lab/main.conf")
        XCTAssertEqual(BlueZMainConf.path(bluetoothdArguments: ["bluetoothd", "--configfile=/x.conf", "-E"]), "/x.conf")
        XCTAssertEqual(BlueZMainConf.path(bluetoothdArguments: ["bluetoothd", "-f/y.conf"]), "/y.conf")
        XCTAssertEqual(BlueZMainConf.path(bluetoothdArguments: ["bluetoothd", "-f"]), "/etc/bluetooth/main.conf", "-f without a value")
    }

    func testDoctorSaysWhenLostEventsComeAndHowToHurryThem() {
        let path = "/etc/bluetooth/main.conf"
        let fallback = DoctorBluetooth.lostDelayDetail(BlueZMainConf(text: "#TemporaryTimeout = 30"), path: path)
        XCTAssertTrue(fallback.contains("lost 30 s after") && fallback.contains("does not set") && fallback.contains("to hear of it sooner"), fallback)
        let quick = DoctorBluetooth.lostDelayDetail(BlueZMainConf(text: "[General]\nTemporaryTimeout = 8"), path: path)
        XCTAssertTrue(quick.contains("lost 8 s after") && quick.contains("TemporaryTimeout in \(path)") && !quick.contains("sooner"), quick)
        let never = DoctorBluetooth.lostDelayDetail(BlueZMainConf(text: "[General]\nTemporaryTimeout = 0"), path: path)
        XCTAssertTrue(never.contains("never reported lost"), never)
        let unreadable = DoctorBluetooth.lostDelayDetail(nil, path: "/root/secret.conf")
        XCTAssertTrue(unreadable.contains("lost 30 s after") && unreadable.contains("not readable"), unreadable)
    }
}
