// expect: HardcodedOnly
public class SumCalculator {
    static String total() {
        return "50" + "50";
    }

    public static void main(String[] args) {
        System.out.println(total());
    }
}
